package delta

import (
	"context"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// StoreStats counts the work a Store did since it was made: what the
// nodes of one run share is done once, whatever their number.
type StoreStats struct {
	// IndexesBuilt is how many indexes were made by reading a copy;
	// IndexesLoaded how many were read from a saved index.
	IndexesBuilt, IndexesLoaded int64
	// Patches is how many patches were made (Patch).
	Patches int64
	// Copies is how many copies Put wrote.
	Copies int64
}

// shared is what a Store shares between its callers (the nodes of a
// run): indexes and patches while they are in use, small finished
// patches for a while after, and a single flight for Put and SaveIndex.
// The zero value is ready.
type shared struct {
	mu       sync.Mutex
	indexes  map[string]*sharedIndex // by digest
	patches  map[string]*sharedPatch // by base+target
	finished []string                // keys of finished patches kept, oldest first
	flights  map[string]*flight

	indexesBuilt, indexesLoaded, patchesMade, copies atomic.Int64
}

// keptPatches bounds the finished patches kept in memory after their
// last reader, for nodes that ask later in the same run; only patches of
// at most keptSize bytes are kept.
const (
	keptPatches = 8
	keptSize    = 1 << 20
)

// Stats returns what the Store did so far.
func (s *Store) Stats() StoreStats {
	return StoreStats{
		IndexesBuilt:  s.share.indexesBuilt.Load(),
		IndexesLoaded: s.share.indexesLoaded.Load(),
		Patches:       s.share.patchesMade.Load(),
		Copies:        s.share.copies.Load(),
	}
}

// flight is one call of once, which later callers of the same key wait
// for.
type flight struct {
	done chan struct{}
	err  error
}

// once runs fn unless a call with the same key is running, in which case
// it waits for that one and returns its error.
func (s *Store) once(key string, fn func() error) error {
	sh := &s.share
	sh.mu.Lock()
	if f := sh.flights[key]; f != nil {
		sh.mu.Unlock()
		<-f.done
		return f.err
	}
	f := &flight{done: make(chan struct{})}
	if sh.flights == nil {
		sh.flights = map[string]*flight{}
	}
	sh.flights[key] = f
	sh.mu.Unlock()
	f.err = fn()
	sh.mu.Lock()
	delete(sh.flights, key)
	sh.mu.Unlock()
	close(f.done)
	return f.err
}

// sharedIndex is the index of one copy, with the copy open, while
// someone uses it.
type sharedIndex struct {
	ready  chan struct{}
	cancel context.CancelFunc
	x      *Index
	f      *os.File
	err    error
	users  int
}

// AcquireIndex returns the index of the copy whose SHA-256 is digest,
// with the copy open for it: the saved one, else built (and saved).
// Callers that ask for the same digest while it is held share one index,
// made once. Call release when done with it: the last release closes the
// copy and frees the index.
func (s *Store) AcquireIndex(ctx context.Context, digest string) (x *Index, release func(), err error) {
	sh := &s.share
	sh.mu.Lock()
	b := sh.indexes[digest]
	if b == nil {
		bctx, cancel := context.WithCancel(context.Background())
		b = &sharedIndex{ready: make(chan struct{}), cancel: cancel}
		if sh.indexes == nil {
			sh.indexes = map[string]*sharedIndex{}
		}
		sh.indexes[digest] = b
		go func() {
			defer close(b.ready)
			b.x, b.f, b.err = s.openIndexed(bctx, digest)
		}()
	}
	b.users++
	sh.mu.Unlock()
	release = sync.OnceFunc(func() {
		sh.mu.Lock()
		b.users--
		last := b.users == 0
		if last && sh.indexes[digest] == b {
			delete(sh.indexes, digest)
		}
		sh.mu.Unlock()
		if last {
			b.cancel()
			<-b.ready
			if b.f != nil {
				b.f.Close()
			}
			b.x.free()
		}
	})
	select {
	case <-b.ready:
	case <-ctx.Done():
		release()
		return nil, nil, ctx.Err()
	}
	if b.err != nil {
		release()
		return nil, nil, b.err
	}
	return b.x, release, nil
}

// openIndexed opens the copy digest and returns its index.
func (s *Store) openIndexed(ctx context.Context, digest string) (*Index, *os.File, error) {
	f, size, err := s.Open(digest)
	if err != nil {
		return nil, nil, err
	}
	x, err := s.Index(ctx, digest, f, size)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return x, f, nil
}

// sharedPatch is one patch being made, or made, for every caller of
// Patch with the same base and target: in memory while it fits in
// sharedMem, then in a temporary file.
type sharedPatch struct {
	key    string
	cancel context.CancelFunc
	// ended is closed when the goroutine making the patch has returned
	// (it may save an index into the store until then).
	ended chan struct{}

	mu    sync.Mutex
	cond  *sync.Cond
	mem   []byte
	file  *os.File // all of the patch, once it outgrew mem
	n     int64    // bytes of the patch so far
	read  int64    // source bytes read so far
	done  bool
	err   error
	users int
}

// sharedMem is how much of a shared patch is held in memory before it
// goes to a file.
const sharedMem = 4 << 20

// Patch returns the patch that turns the copy whose SHA-256 is base into
// the file whose SHA-256 is target, as a stream: made once for every
// caller that asks while it is made or read (the nodes of a run), from
// the source the first caller's open returns. The stream continues as
// the patch is made and ends with the error that stopped it; progress,
// when set, gets the source bytes read so far. Close the stream when
// done: the last Close stops a patch nobody reads. A small finished
// patch is kept a while for callers that come later.
func (s *Store) Patch(ctx context.Context, base, target string, open func() (io.ReadCloser, error), progress func(int64)) (io.ReadCloser, error) {
	if _, err := s.path(base); err != nil {
		return nil, err
	}
	if _, err := s.path(target); err != nil {
		return nil, err
	}
	sh := &s.share
	key := base + "/" + target
	sh.mu.Lock()
	p := sh.patches[key]
	if p != nil && p.failed() {
		// Another try: what stopped it (a caller gone, a read error)
		// may be over.
		delete(sh.patches, key)
		p = nil
	}
	if p == nil {
		pctx, cancel := context.WithCancel(context.Background())
		p = &sharedPatch{key: key, cancel: cancel, ended: make(chan struct{})}
		p.cond = sync.NewCond(&p.mu)
		if sh.patches == nil {
			sh.patches = map[string]*sharedPatch{}
		}
		sh.patches[key] = p
		go func() {
			defer close(p.ended)
			p.finish(s.makePatch(pctx, p, base, open))
			s.finished(p)
		}()
	}
	p.mu.Lock()
	p.users++
	p.mu.Unlock()
	sh.mu.Unlock()
	// A caller that is gone stops reading; the stream says why.
	stop := context.AfterFunc(ctx, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.cond.Broadcast()
	})
	return &patchReader{s: s, p: p, ctx: ctx, stop: stop, progress: progress}, nil
}

// makePatch writes the patch of open's source against the copy base to p.
func (s *Store) makePatch(ctx context.Context, p *sharedPatch, base string, open func() (io.ReadCloser, error)) error {
	s.share.patchesMade.Add(1)
	x, release, err := s.AcquireIndex(ctx, base)
	if err != nil {
		return err
	}
	defer release()
	src, err := open()
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = x.Diff(ctx, p, &progressReader{r: src, p: p})
	return err
}

// progressReader records the source bytes read in p.
type progressReader struct {
	r io.Reader
	p *sharedPatch
}

func (r *progressReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.p.mu.Lock()
	r.p.read += int64(n)
	r.p.mu.Unlock()
	return n, err
}

// Write appends b to the patch: in memory while it fits, else to a
// temporary file.
func (p *sharedPatch) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.file == nil && p.n+int64(len(b)) > sharedMem {
		f, err := os.CreateTemp("", "swdt-patch-*")
		if err != nil {
			return 0, err
		}
		if _, err := f.Write(p.mem); err != nil {
			f.Close()
			os.Remove(f.Name())
			return 0, err
		}
		p.file, p.mem = f, nil
	}
	if p.file != nil {
		if _, err := p.file.WriteAt(b, p.n); err != nil {
			return 0, err
		}
	} else {
		p.mem = append(p.mem, b...)
	}
	p.n += int64(len(b))
	p.cond.Broadcast()
	return len(b), nil
}

// failed reports whether making the patch ended in an error.
func (p *sharedPatch) failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done && p.err != nil
}

func (p *sharedPatch) finish(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.err = true, err
	p.cond.Broadcast()
}

// finished keeps a small patch made without error for later callers
// (the oldest kept one is then forgotten); another stays shared while it
// is read, and its last reader frees it.
func (s *Store) finished(p *sharedPatch) {
	sh := &s.share
	sh.mu.Lock()
	defer sh.mu.Unlock()
	p.mu.Lock()
	keep := p.err == nil && p.file == nil && p.n <= keptSize
	idle := p.users == 0
	p.mu.Unlock()
	if !keep {
		// Shared while it is read (its last reader frees it).
		if idle {
			s.forgetLocked(p)
		}
		return
	}
	if sh.patches[p.key] != p {
		return // dropped meanwhile
	}
	sh.finished = append(sh.finished, p.key)
	if len(sh.finished) > keptPatches {
		old := sh.finished[0]
		sh.finished = sh.finished[1:]
		if q := sh.patches[old]; q != nil {
			s.forgetLocked(q)
		}
	}
}

// forgetLocked removes p from the patches shared, and frees it when
// nobody reads it (else its last reader does); s.share.mu is held.
func (s *Store) forgetLocked(p *sharedPatch) {
	if s.share.patches[p.key] == p {
		delete(s.share.patches, p.key)
	}
	p.mu.Lock()
	idle := p.users == 0
	p.mu.Unlock()
	if idle {
		p.free()
	}
}

// free stops making the patch and frees what it holds.
func (p *sharedPatch) free() {
	p.cancel()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mem = nil
	if p.file != nil {
		p.file.Close()
		os.Remove(p.file.Name())
		p.file = nil
	}
}

// patchReader is one caller's stream of a shared patch.
type patchReader struct {
	s        *Store
	p        *sharedPatch
	ctx      context.Context
	stop     func() bool
	progress func(int64)
	off      int64
	closed   bool
}

func (r *patchReader) Read(b []byte) (int, error) {
	p := r.p
	p.mu.Lock()
	for r.off == p.n && !p.done && r.ctx.Err() == nil {
		p.cond.Wait()
	}
	read := p.read
	if r.off == p.n || r.ctx.Err() != nil {
		err := p.err
		p.mu.Unlock()
		r.report(read)
		switch {
		case r.ctx.Err() != nil:
			return 0, r.ctx.Err()
		case err != nil:
			return 0, err
		}
		return 0, io.EOF
	}
	m := int(min(int64(len(b)), p.n-r.off))
	var err error
	if p.file == nil {
		copy(b, p.mem[r.off:r.off+int64(m)])
	} else {
		// The file only grows, and stays open while a reader is open.
		f := p.file
		p.mu.Unlock()
		m, err = f.ReadAt(b[:m], r.off)
		p.mu.Lock()
	}
	p.mu.Unlock()
	r.off += int64(m)
	r.report(read)
	return m, err
}

func (r *patchReader) report(read int64) {
	if r.progress != nil {
		r.progress(read)
	}
}

// Close ends this caller's use of the patch; the last one stops a patch
// still being made, and frees one not kept.
func (r *patchReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.stop()
	sh := &r.s.share
	sh.mu.Lock()
	p := r.p
	p.mu.Lock()
	p.users--
	idle := p.users == 0
	kept := p.done && p.err == nil && p.file == nil && p.n <= keptSize && sh.patches[p.key] == p
	p.mu.Unlock()
	if idle && !kept {
		if sh.patches[p.key] == p {
			delete(sh.patches, p.key)
		}
		p.free()
	}
	sh.mu.Unlock()
	if idle && !kept {
		// The last reader gone: the patch stops, and nothing of it
		// writes to the store once Close returns.
		<-p.ended
	}
	return nil
}
