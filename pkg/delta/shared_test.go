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
	"sync"
	"testing"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func randomBytes(seed byte, n int) []byte {
	b := make([]byte, n)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{seed}), b)
	return b
}

// The nodes of a run that patch one file to the same new build share one
// index and one patch: made once however many nodes ask, whether they ask
// at once or one after the other, small or large, and every node's
// stream rebuilds the file.
func TestPatchSharedByNodes(t *testing.T) {
	t.Parallel()
	old := randomBytes(1, 3<<20)
	small := bytes.Clone(old)
	copy(small[1<<20:], "a rebuilt function")
	large := randomBytes(2, sharedMem+(1<<20)) // nothing in common: a patch over sharedMem
	tests := []struct {
		name        string
		next        []byte
		nodes       int
		oneByOne    bool // each node reads its patch before the next asks
		failFirst   bool // the first source cannot be opened
		wantPatches int64
	}{
		{name: "ten nodes at once", next: small, nodes: 10, wantPatches: 1},
		{name: "ten nodes one after the other", next: small, nodes: 10, oneByOne: true, wantPatches: 1},
		{name: "a patch larger than memory holds, ten nodes at once", next: large, nodes: 10, wantPatches: 1},
		{name: "a patch that failed is made again", next: small, nodes: 2, oneByOne: true, failFirst: true, wantPatches: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &Store{Dir: t.TempDir()}
			if err := s.Put(sum(old), bytes.NewReader(old), int64(len(old))); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			opened := 0
			var mu sync.Mutex
			open := func() (io.ReadCloser, error) {
				mu.Lock()
				defer mu.Unlock()
				opened++
				if tc.failFirst && opened == 1 {
					return nil, os.ErrNotExist
				}
				return io.NopCloser(bytes.NewReader(tc.next)), nil
			}
			read := func(r io.ReadCloser) ([]byte, error) {
				defer r.Close()
				return io.ReadAll(r)
			}
			var patches [][]byte
			var errs []error
			if tc.oneByOne {
				for range tc.nodes {
					r, err := s.Patch(ctx, sum(old), sum(tc.next), open, nil)
					if err != nil {
						t.Fatal(err)
					}
					p, err := read(r)
					patches, errs = append(patches, p), append(errs, err)
				}
			} else {
				readers := make([]io.ReadCloser, tc.nodes)
				for i := range readers {
					r, err := s.Patch(ctx, sum(old), sum(tc.next), open, nil)
					if err != nil {
						t.Fatal(err)
					}
					readers[i] = r
				}
				patches, errs = make([][]byte, tc.nodes), make([]error, tc.nodes)
				var wg sync.WaitGroup
				for i, r := range readers {
					wg.Go(func() { patches[i], errs[i] = read(r) })
				}
				wg.Wait()
			}
			for i, p := range patches {
				if tc.failFirst && i == 0 {
					if !errors.Is(errs[i], os.ErrNotExist) {
						t.Errorf("node 0: %v, want the source's error", errs[i])
					}
					continue
				}
				if errs[i] != nil {
					t.Fatalf("node %d: %v", i, errs[i])
				}
				var out bytes.Buffer
				if _, err := Apply(&out, bytes.NewReader(old), int64(len(old)), bytes.NewReader(p)); err != nil || !bytes.Equal(out.Bytes(), tc.next) {
					t.Fatalf("node %d: the patch does not rebuild the file (%v)", i, err)
				}
			}
			st := s.Stats()
			if st.Patches != tc.wantPatches || st.IndexesBuilt+st.IndexesLoaded != tc.wantPatches {
				t.Errorf("stats %+v, want %d patches, each with one index", st, tc.wantPatches)
			}
		})
	}
}

// Nodes that ask for one copy's index at once share it; once the last
// lets it go, the next asks again.
func TestIndexSharedWhileHeld(t *testing.T) {
	t.Parallel()
	old := randomBytes(3, 1<<20)
	s := &Store{Dir: t.TempDir()}
	if err := s.Put(sum(old), bytes.NewReader(old), int64(len(old))); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var releases []func()
	var first *Index
	for i := range 10 {
		x, release, err := s.AcquireIndex(ctx, sum(old))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = x
		} else if x != first {
			t.Fatalf("node %d got another index", i)
		}
		releases = append(releases, release)
	}
	for _, r := range releases {
		r()
	}
	if _, release, err := s.AcquireIndex(ctx, sum(old)); err != nil {
		t.Fatal(err)
	} else {
		release()
	}
	// Built once, then loaded from the saved one.
	if st := s.Stats(); st.IndexesBuilt != 1 || st.IndexesLoaded != 1 {
		t.Errorf("stats %+v, want one index built, one loaded", st)
	}
}

// PutIndexed keeps a copy and its index from one read of the source, and
// keeps nothing of a source that is not the digest it was given.
func TestPutIndexed(t *testing.T) {
	t.Parallel()
	b := randomBytes(5, 2<<20)
	tests := []struct {
		name      string
		digest    string
		putBefore bool // the copy is kept already, without its index
		wantErr   error
		want      StoreStats // after PutIndexed and one AcquireIndex
	}{
		{name: "a new build", digest: sum(b), want: StoreStats{Copies: 1, IndexesBuilt: 1, IndexesLoaded: 1}},
		{name: "a copy kept without its index", digest: sum(b), putBefore: true, want: StoreStats{Copies: 1, IndexesBuilt: 1, IndexesLoaded: 1}},
		{name: "a source changed since it was hashed", digest: sum(b[1:]), wantErr: ErrReference},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &Store{Dir: t.TempDir()}
			if tc.putBefore {
				if err := s.Put(tc.digest, bytes.NewReader(b), int64(len(b))); err != nil {
					t.Fatal(err)
				}
			}
			err := s.PutIndexed(context.Background(), tc.digest, bytes.NewReader(b), int64(len(b)))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("PutIndexed: %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if s.Has(tc.digest) {
					t.Error("a copy that is not its digest was kept")
				}
				return
			}
			if _, release, err := s.AcquireIndex(context.Background(), tc.digest); err != nil {
				t.Fatal(err)
			} else {
				release()
			}
			if st := s.Stats(); st != tc.want {
				t.Errorf("stats %+v, want %+v", st, tc.want)
			}
		})
	}
}

// A node that gives up (its context ends) stops reading the shared
// patch; the others still get all of it, made once.
func TestPatchReaderGone(t *testing.T) {
	t.Parallel()
	old := randomBytes(6, 1<<20)
	next := bytes.Clone(old)
	copy(next[1000:], "a change")
	s := &Store{Dir: t.TempDir()}
	if err := s.Put(sum(old), bytes.NewReader(old), int64(len(old))); err != nil {
		t.Fatal(err)
	}
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(next)), nil }
	gone, cancel := context.WithCancel(context.Background())
	r1, err := s.Patch(gone, sum(old), sum(next), open, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := s.Patch(context.Background(), sum(old), sum(next), open, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	cancel()
	if _, err := io.ReadAll(r1); !errors.Is(err, context.Canceled) {
		t.Errorf("the node that gave up read on: %v", err)
	}
	p, err := io.ReadAll(r2)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := Apply(&out, bytes.NewReader(old), int64(len(old)), bytes.NewReader(p)); err != nil || !bytes.Equal(out.Bytes(), next) {
		t.Fatalf("the other node's patch does not rebuild the file (%v)", err)
	}
	if st := s.Stats(); st.Patches != 1 {
		t.Errorf("%d patches made, want 1", st.Patches)
	}
}
