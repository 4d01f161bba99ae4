package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"
)

// DefaultStoreSize bounds a Store when its MaxBytes is 0.
const DefaultStoreSize = 2 << 30

// Store keeps local copies of binaries swdt put on nodes, by SHA-256, so
// that the next push to a node holding one can be a patch against it. It
// is bounded: Put removes the least recently used copies beyond MaxBytes.
// Copies are shared by every node that holds the same bytes, and so are
// their indexes and the patches made against them while they are in use
// (AcquireIndex, Patch): a run over many nodes makes each once. Beside a
// copy may lie its index (SaveIndex; at most half the copy's size, not
// counted in MaxBytes), removed with it.
type Store struct {
	// Dir holds one file per copy, named by its SHA-256.
	Dir string
	// MaxBytes bounds the copies' total size (0: DefaultStoreSize).
	MaxBytes int64

	// share is what the Store's callers share (shared.go).
	share shared
}

var digestRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

func (s *Store) path(digest string) (string, error) {
	if !digestRE.MatchString(digest) {
		return "", fmt.Errorf("not a SHA-256: %q", digest)
	}
	return filepath.Join(s.Dir, digest), nil
}

// Open returns the copy whose SHA-256 is digest and its size, and marks it
// used; a missing copy wraps fs.ErrNotExist. The content is not verified
// here (Diff checks it while it indexes it).
func (s *Store) Open(digest string) (*os.File, int64, error) {
	p, err := s.path(digest)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	now := time.Now()
	_ = os.Chtimes(p, now, now) // least recently used goes first
	return f, fi.Size(), nil
}

// Has reports whether the store holds a copy whose SHA-256 is digest.
func (s *Store) Has(digest string) bool {
	p, err := s.path(digest)
	if err != nil {
		return false
	}
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// indexSuffix names the saved index of a copy: its digest and this.
const indexSuffix = ".idx"

// Index returns the index of the copy whose SHA-256 is digest, open as
// ref (size bytes): the one saved beside it, else built and saved for the
// next patch against it (a failed save only costs that).
func (s *Store) Index(ctx context.Context, digest string, ref io.ReaderAt, size int64) (*Index, error) {
	p, err := s.path(digest)
	if err != nil {
		return nil, err
	}
	if f, err := os.Open(p + indexSuffix); err == nil {
		x, old, lerr := loadIndexFile(f, ref, size)
		f.Close() // a mapped index stays mapped
		if lerr == nil {
			s.share.indexesLoaded.Add(1)
			if old {
				_ = s.saveIndex(p, x) // the next load maps it
			}
			return x, nil
		}
	}
	x, err := NewIndex(ctx, ref, size, digest)
	if err != nil {
		return nil, err
	}
	s.share.indexesBuilt.Add(1)
	_ = s.saveIndex(p, x)
	return x, nil
}

// SaveIndex indexes the copy whose SHA-256 is digest and saves the index
// beside it, unless it is there: the next patch against the copy loads
// it rather than reading the copy to index it. Callers that ask at once
// (the nodes of a run) wait for one index.
func (s *Store) SaveIndex(ctx context.Context, digest string) error {
	p, err := s.path(digest)
	if err != nil {
		return err
	}
	return s.once("index/"+digest, func() error {
		if _, err := os.Stat(p + indexSuffix); err == nil {
			return nil
		}
		f, size, err := s.Open(digest)
		if err != nil {
			return err
		}
		defer f.Close()
		x, err := NewIndex(ctx, f, size, digest)
		if err != nil {
			return err
		}
		s.share.indexesBuilt.Add(1)
		defer x.free()
		return s.saveIndex(p, x)
	})
}

// PutIndexed is Put and SaveIndex in one read of src: the copy is
// hashed and indexed as it is written, and kept only when its SHA-256 is
// digest (a source that changed since it was hashed wraps ErrReference).
// A copy already kept only gets its index, if it lacks one. Callers that
// put the same digest at once (the nodes of a run) wait for one copy.
func (s *Store) PutIndexed(ctx context.Context, digest string, src io.ReaderAt, size int64) error {
	p, err := s.path(digest)
	if err != nil {
		return err
	}
	kept := false
	err = s.once("put/"+digest, func() error {
		if fi, err := os.Stat(p); err == nil && fi.Size() == size {
			now := time.Now()
			kept = true
			return os.Chtimes(p, now, now)
		}
		return s.putIndexed(ctx, p, digest, src, size)
	})
	if err == nil && kept {
		err = s.SaveIndex(ctx, digest)
	}
	return err
}

func (s *Store) putIndexed(ctx context.Context, p, digest string, src io.ReaderAt, size int64) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", s.Dir, err)
	}
	tmp, err := os.CreateTemp(s.Dir, ".put-*")
	if err != nil {
		return fmt.Errorf("keep a copy for patches: %w", err)
	}
	x, err := NewIndex(ctx, teeReaderAt{r: src, w: tmp}, size, digest)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		x.free()
		return fmt.Errorf("keep a copy for patches: %w", err)
	}
	s.share.copies.Add(1)
	s.share.indexesBuilt.Add(1)
	_ = s.saveIndex(p, x) // a failed save only costs the next patch a read of the copy
	x.free()
	return s.prune(p)
}

// teeReaderAt writes what is read from r to w at the same offsets.
type teeReaderAt struct {
	r io.ReaderAt
	w io.WriterAt
}

func (t teeReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := t.r.ReadAt(p, off)
	if n > 0 {
		if _, werr := t.w.WriteAt(p[:n], off); werr != nil {
			// Nothing read counts: the index stops.
			return 0, fmt.Errorf("write the copy: %w", werr)
		}
	}
	return n, err
}

// saveIndex writes x beside the copy at p.
func (s *Store) saveIndex(p string, x *Index) error {
	tmp, err := os.CreateTemp(s.Dir, ".idx-*")
	if err != nil {
		return err
	}
	err = x.Save(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p+indexSuffix)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}

// Put copies size bytes of src into the store as digest (a copy, never a
// link: a build that rewrites its output in place must not change what is
// kept), then prunes. Callers that put the same digest at once (the nodes
// of a run) wait for one copy.
func (s *Store) Put(digest string, src io.ReaderAt, size int64) error {
	p, err := s.path(digest)
	if err != nil {
		return err
	}
	return s.once("put/"+digest, func() error { return s.put(p, src, size) })
}

func (s *Store) put(p string, src io.ReaderAt, size int64) error {
	if fi, err := os.Stat(p); err == nil && fi.Size() == size {
		now := time.Now()
		return os.Chtimes(p, now, now)
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", s.Dir, err)
	}
	tmp, err := os.CreateTemp(s.Dir, ".put-*")
	if err != nil {
		return fmt.Errorf("keep a copy for patches: %w", err)
	}
	_, err = io.Copy(tmp, io.NewSectionReader(src, 0, size))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("keep a copy for patches: %w", err)
	}
	s.share.copies.Add(1)
	return s.prune(p)
}

// prune removes the least recently used copies until the rest fit in
// MaxBytes; keep is never removed.
func (s *Store) prune(keep string) error {
	limit := s.MaxBytes
	if limit <= 0 {
		limit = DefaultStoreSize
	}
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return fmt.Errorf("prune %s: %w", s.Dir, err)
	}
	type copyInfo struct {
		path string
		size int64
		used time.Time
	}
	var all []copyInfo
	var total int64
	for _, e := range entries {
		if !digestRE.MatchString(e.Name()) {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		all = append(all, copyInfo{filepath.Join(s.Dir, e.Name()), fi.Size(), fi.ModTime()})
		total += fi.Size()
	}
	sort.Slice(all, func(i, j int) bool { return all[i].used.Before(all[j].used) })
	for _, c := range all {
		if total <= limit {
			break
		}
		if c.path == keep {
			continue
		}
		if err := os.Remove(c.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("prune %s: %w", s.Dir, err)
		}
		_ = os.Remove(c.path + indexSuffix)
		total -= c.size
	}
	return nil
}
