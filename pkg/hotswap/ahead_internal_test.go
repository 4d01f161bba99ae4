package hotswap

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestSpill(t *testing.T) {
	const limit = 100
	content := bytes.Repeat([]byte("0123456789"), 50) // 500 bytes
	tests := []struct {
		name   string
		size   int   // bytes written, in writes of 30
		fail   error // the writer's end
		drop   bool  // the reader drops the stream after wait
		whole  bool
		wantEr error
	}{
		{name: "fits: whole", size: 90, whole: true},
		{name: "empty: whole", size: 0, whole: true},
		{name: "over the limit: a stream of all of it", size: 500},
		{name: "the writer failed", size: 60, fail: io.ErrUnexpectedEOF, wantEr: io.ErrUnexpectedEOF},
		{name: "the writer fails after the buffer filled", size: 500, fail: io.ErrUnexpectedEOF, wantEr: io.ErrUnexpectedEOF},
		{name: "a dropped stream stops the writer", size: 500, drop: true, wantEr: errDropped},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSpill(limit)
			writerDone := make(chan error, 1)
			go func() {
				var err error
				for off := 0; off < tc.size && err == nil; off += 30 {
					_, err = s.Write(content[off:min(off+30, tc.size)])
				}
				if err == nil {
					err = tc.fail
				}
				s.finish(err)
				writerDone <- err
			}()
			data, whole, err := s.wait()
			if err != nil {
				if !errors.Is(err, tc.wantEr) {
					t.Fatalf("wait: %v, want %v", err, tc.wantEr)
				}
				return
			}
			if whole != tc.whole {
				t.Fatalf("whole %v, want %v", whole, tc.whole)
			}
			if whole {
				if !bytes.Equal(data, content[:tc.size]) {
					t.Errorf("got %q", data)
				}
				return
			}
			if tc.drop {
				_ = s.Close()
				if err := <-writerDone; !errors.Is(err, tc.wantEr) {
					t.Errorf("writer ended with %v, want %v", err, tc.wantEr)
				}
				return
			}
			got, err := io.ReadAll(s)
			if tc.wantEr != nil {
				if !errors.Is(err, tc.wantEr) {
					t.Errorf("read: %v, want %v", err, tc.wantEr)
				}
				return
			}
			if err != nil || !bytes.Equal(got, content[:tc.size]) {
				t.Errorf("read %d bytes (%v), want %d", len(got), err, tc.size)
			}
		})
	}
}
