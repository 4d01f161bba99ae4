package delta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
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
	y, err := storeIndex(t, s, digest)
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

// The store's saved index is used where it is mapped (on systems that
// map files), makes the patch the index it was saved from makes, and is
// freed by unmapping it; an index saved by an earlier version (no
// padding before its table) still loads, read rather than mapped, and is
// saved again in the current version.
func TestSavedIndexMapped(t *testing.T) {
	ref := make([]byte, 1<<20)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{10}), ref)
	src := append(bytes.Clone(ref[:5000]), append([]byte("moved code"), ref[5000:]...)...)
	sum := sha256.Sum256(ref)
	digest := hex.EncodeToString(sum[:])
	x, err := NewIndex(context.Background(), bytes.NewReader(ref), int64(len(ref)), "")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if _, err := x.Diff(context.Background(), &want, bytes.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	var v2 bytes.Buffer
	if err := x.Save(&v2); err != nil {
		t.Fatal(err)
	}
	// Version 1: its magic, the same header, no padding.
	hdr := v2.Bytes()[len(indexMagic):indexHeader]
	hdr = hdr[:len(binary.AppendUvarint(binary.AppendUvarint(nil, uint64(x.idx.bits)), uint64(len(ref))))]
	v1 := append(append([]byte(indexMagicV1), hdr...), v2.Bytes()[indexHeader:]...)
	for _, tc := range []struct {
		name       string
		saved      []byte
		wantMapped bool
	}{
		{"saved now", v2.Bytes(), mapsFiles},
		{"saved by version 1", v1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Store{Dir: t.TempDir()}
			if err := s.Put(digest, bytes.NewReader(ref), int64(len(ref))); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(s.Dir, digest+indexSuffix), tc.saved, 0o600); err != nil {
				t.Fatal(err)
			}
			y, err := storeIndex(t, s, digest)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Stats().IndexesLoaded; got != 1 {
				t.Fatalf("indexes loaded = %d, want 1 (the saved one)", got)
			}
			if mapped := y.unmap != nil; mapped != tc.wantMapped {
				t.Errorf("mapped = %v, want %v", mapped, tc.wantMapped)
			}
			var got bytes.Buffer
			if _, err := y.Diff(context.Background(), &got, bytes.NewReader(src)); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Error("the loaded index makes another patch than the one saved")
			}
			if raw, _ := os.ReadFile(filepath.Join(s.Dir, digest+indexSuffix)); !bytes.Equal(raw, v2.Bytes()) {
				t.Error("the saved index is not in the current version after it was loaded")
			}
			y.free()
			if y.idx.tab != nil {
				t.Error("the freed index still has its table")
			}
		})
	}
}

// BenchmarkLoadSavedIndex loads the saved index of a 128 MiB copy (a
// 64 MiB table) as the store does (mapped where the system can) and by
// reading it (LoadIndex, what the store did before).
func BenchmarkLoadSavedIndex(b *testing.B) {
	ref := make([]byte, 128<<20)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{11}), ref)
	sum := sha256.Sum256(ref)
	digest := hex.EncodeToString(sum[:])
	s := &Store{Dir: b.TempDir()}
	if err := s.PutIndexed(context.Background(), digest, bytes.NewReader(ref), int64(len(ref))); err != nil {
		b.Fatal(err)
	}
	f, size, err := s.Open(digest)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	saved := filepath.Join(s.Dir, digest+indexSuffix)
	b.Run("store", func(b *testing.B) {
		for b.Loop() {
			x, err := s.Index(context.Background(), digest, f, size)
			if err != nil {
				b.Fatal(err)
			}
			x.free()
		}
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			g, err := os.Open(saved)
			if err != nil {
				b.Fatal(err)
			}
			x, err := LoadIndex(g, f, size)
			g.Close()
			if err != nil {
				b.Fatal(err)
			}
			x.free()
		}
	})
}

// storeIndex is the store's index of its copy digest (its copy open until
// the test ends).
func storeIndex(t *testing.T, s *Store, digest string) (*Index, error) {
	t.Helper()
	f, size, err := s.Open(digest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return s.Index(context.Background(), digest, f, size)
}
