package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// failAfter accepts n bytes, then fails every write.
type failAfter struct {
	n   int
	got bytes.Buffer
}

var errDiskFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.got.Len()+len(p) > f.n {
		return 0, errDiskFull
	}
	return f.got.Write(p)
}

// TestStagedWriter: what goes in by Write and ReadFrom, in pieces of any
// size across its blocks, comes out in order with its SHA-256; a write
// past the declared size writes nothing more and fails; a failed write of
// the file fails the writer without blocking whoever fills it.
func TestStagedWriter(t *testing.T) {
	content := []byte(strings.Repeat("0123456789abcdef", (3*stagedBlock+12345)/16))
	tests := []struct {
		name     string
		piece    int // bytes per Write; 0: one ReadFrom
		size     int64
		failAt   int // the file fails past this many bytes (0: never)
		wantErr  error
		wantFile bool
	}{
		{name: "small writes", piece: 1000, size: int64(len(content)), wantFile: true},
		{name: "writes larger than a block", piece: stagedBlock + 17, size: int64(len(content)), wantFile: true},
		{name: "one ReadFrom", size: int64(len(content)), wantFile: true},
		{name: "longer than declared, by Write", piece: 4096, size: int64(len(content)) - 1, wantErr: errTooLong},
		{name: "longer than declared, by ReadFrom", size: int64(len(content)) - 1, wantErr: errTooLong},
		{name: "the file cannot be written", piece: 64 << 10, size: int64(len(content)), failAt: stagedBlock + 1, wantErr: errDiskFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &failAfter{n: len(content) + 1}
			if tt.failAt > 0 {
				out.n = tt.failAt
			}
			sw := newStagedWriter(out, tt.size, nil)
			defer sw.stop()
			var err error
			if tt.piece == 0 {
				_, err = sw.ReadFrom(bytes.NewReader(content))
			} else {
				for b := content; len(b) > 0 && err == nil; {
					n := min(tt.piece, len(b))
					_, err = sw.Write(b[:n])
					b = b[n:]
				}
			}
			if err == nil {
				err = sw.flush()
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !tt.wantFile {
				return
			}
			want := sha256.Sum256(content)
			if !bytes.Equal(out.got.Bytes(), content) || sw.sum() != hex.EncodeToString(want[:]) {
				t.Errorf("wrote %d bytes (equal: %v), sum %s", out.got.Len(), bytes.Equal(out.got.Bytes(), content), sw.sum())
			}
		})
	}
}
