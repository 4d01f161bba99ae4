package ops

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// TestAttachments: attachments written one after another read back as
// they were, each to its end; a failed one reads as failed; an input cut
// inside one reads as unexpected EOF.
func TestAttachments(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 20<<10) // 320 KiB: several frames
	failed := errors.New("the patch could not be made")
	tests := []struct {
		name    string
		parts   []io.Reader
		cut     int // bytes cut off the end of the input
		want    []string
		wantErr []error
	}{
		{name: "two, then the next in order", parts: []io.Reader{bytes.NewReader(big), iotest.OneByteReader(bytes.NewReader([]byte("small")))},
			want: []string{string(big), "small"}, wantErr: []error{io.EOF, io.EOF}},
		{name: "empty", parts: []io.Reader{bytes.NewReader(nil)}, want: []string{""}, wantErr: []error{io.EOF}},
		{name: "failed after some bytes", parts: []io.Reader{io.MultiReader(bytes.NewReader([]byte("part")), iotest.ErrReader(failed)), bytes.NewReader([]byte("next"))},
			want: []string{"part", "next"}, wantErr: []error{ErrAttachmentFailed, io.EOF}},
		{name: "cut inside", parts: []io.Reader{bytes.NewReader(big)}, cut: 100,
			want: []string{""}, wantErr: []error{io.ErrUnexpectedEOF}}, // only its error matters
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var in bytes.Buffer
			for _, p := range tc.parts {
				if err := WriteAttachment(&in, p); err != nil && !errors.Is(err, failed) {
					t.Fatal(err)
				}
			}
			in.Truncate(in.Len() - tc.cut)
			br := bufio.NewReader(&in)
			for i, want := range tc.want {
				got, err := io.ReadAll(AttachmentReader(br))
				if tc.wantErr[i] == io.EOF {
					if err != nil {
						t.Fatalf("attachment %d: %v", i, err)
					}
				} else if !errors.Is(err, tc.wantErr[i]) {
					t.Fatalf("attachment %d: %v, want %v", i, err, tc.wantErr[i])
				}
				if tc.cut == 0 && string(got) != want {
					t.Errorf("attachment %d: %d bytes, want %d", i, len(got), len(want))
				}
			}
		})
	}
}
