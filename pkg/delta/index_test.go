package delta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// A saved index loads into one that makes the same patch; a damaged,
// truncated or other file's saved index is refused, and the store then
// indexes the copy again.
func TestSavedIndex(t *testing.T) {
	ref := make([]byte, 1<<20)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{9}), ref)
	src := append(bytes.Clone(ref[:1000]), append([]byte("a rebuilt function"), ref[1000:]...)...)
	x, err := NewIndex(context.Background(), bytes.NewReader(ref), int64(len(ref)), "")
	if err != nil {
		t.Fatal(err)
	}
	var saved bytes.Buffer
	if err := x.Save(&saved); err != nil {
		t.Fatal(err)
	}
	patchWith := func(x *Index) []byte {
		var p bytes.Buffer
		if _, err := x.Diff(context.Background(), &p, bytes.NewReader(src)); err != nil {
			t.Fatal(err)
		}
		return p.Bytes()
	}
	tests := []struct {
		name    string
		saved   []byte
		size    int64
		wantErr error
	}{
		{name: "as saved", saved: saved.Bytes(), size: int64(len(ref))},
		{name: "truncated", saved: saved.Bytes()[:saved.Len()/2], size: int64(len(ref)), wantErr: ErrPatch},
		{name: "not an index", saved: []byte("MZ something else"), size: int64(len(ref)), wantErr: ErrPatch},
		{name: "of a file of another size", saved: saved.Bytes(), size: int64(len(ref)) - 1, wantErr: ErrReferenceSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y, err := LoadIndex(bytes.NewReader(tt.saved), bytes.NewReader(ref), tt.size)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(patchWith(y), patchWith(x)) {
				t.Error("the loaded index makes another patch than the one saved")
			}
		})
	}

	// The store saves the index beside its copy, loads it, indexes again
	// when it is damaged, and prunes it with the copy.
	s := &Store{Dir: t.TempDir(), MaxBytes: int64(len(ref)) + 1}
	sum := sha256.Sum256(ref)
	digest := hex.EncodeToString(sum[:])
	if err := s.Put(digest, bytes.NewReader(ref), int64(len(ref))); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveIndex(context.Background(), digest); err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(s.Dir, digest+indexSuffix)
	if _, err := os.Stat(idx); err != nil {
		t.Fatalf("no index saved beside the copy: %v", err)
	}
	if err := os.WriteFile(idx, []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, size, err := s.Open(digest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	y, err := s.Index(context.Background(), digest, f, size)
	if err != nil || !bytes.Equal(patchWith(y), patchWith(x)) {
		t.Fatalf("the store's index of a copy whose saved index is damaged: %v", err)
	}
	if raw, _ := os.ReadFile(idx); bytes.Equal(raw, []byte("damaged")) {
		t.Error("the damaged index was not saved again")
	}
	other := bytes.Repeat([]byte{1}, len(ref))
	osum := sha256.Sum256(other)
	if err := s.Put(hex.EncodeToString(osum[:]), bytes.NewReader(other), int64(len(other))); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(idx); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the index of a pruned copy is left: %v", err)
	}
}
