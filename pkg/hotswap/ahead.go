package hotswap

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"

	"sigs.k8s.io/swdt/pkg/delta"
)

// InlineLimit is the largest encoded upload sent inside the swap op's
// request rather than as a file: a small patch then costs no upload round
// trips (open, write, close). A patch made ahead (Prepare) is held in
// memory up to this size.
const InlineLimit = 512 << 10

// Ahead is the work Prepare started for a run before the node answers:
// for each item whose destination's digest the hash cache recorded and
// whose copy the local store holds, the patch against that copy, made
// while the connection and the lock+inspect op are under way, and the
// copy of the source the store keeps for the next run's patch. Run uses a
// patch only when the inspect finds that same digest on the node;
// otherwise it is dropped. A nil *Ahead is valid and holds nothing.
type Ahead struct {
	ctx     context.Context
	store   *delta.Store
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	patches map[string]*aheadPatch // by Item.key
}

// aheadPatch is one item's patch made ahead.
type aheadPatch struct {
	// base is the digest of the destination the patch was made against.
	base string
	out  *spill
	// cancel stops making it.
	cancel context.CancelFunc
	// kept is closed once the source's copy is in the store (or failed);
	// keeping is whether that copy was started.
	kept    chan struct{}
	keeping bool

	// mu guards read, progress and claimed: the patch was taken by Run,
	// or dropped, and is not taken again.
	mu       sync.Mutex
	read     int64
	progress func(int64)
	claimed  bool
}

// Prepare starts, in the background, what a run of items with opts will
// send to a node whose destinations are as opts.Hashes recorded them:
// nothing unless opts compresses (patches need it), keeps a store, is
// not a dry run, and the link is not expected to be one files go as they
// are over (Transfer.ExpectedRTT). Pass the result to Run in
// Options.Ahead, and Close it when the run is over; Run stops it at once
// when the link it measures turns out to be such a link.
//
// An item's Source may have no digest yet (a rebuild that --watch hashes
// while its patch is made): its patch is made all the same, and Resolved
// tells the Ahead the digests before Run. The node verifies every
// decoded file against the digest Run sends, so a source that changed
// between the two reads costs a second upload, never a wrong binary.
func Prepare(ctx context.Context, items []Item, opts Options) *Ahead {
	tr := opts.Transfer
	if opts.DryRun || tr.plain(tr.ExpectedRTT, tr.ExpectedRTT > 0) || tr.Store == nil || opts.Hashes == nil {
		return nil
	}
	actx, cancel := context.WithCancel(ctx)
	a := &Ahead{cancel: cancel, patches: map[string]*aheadPatch{}}
	for _, it := range items {
		known := opts.Hashes.Known(it.Destination)
		if it.Source == nil || known == nil || !known.Exists || known.SHA256 == "" || known.SHA256 == it.Source.SHA256 {
			continue
		}
		if _, done := a.patches[it.key()]; done {
			continue
		}
		if !tr.Store.Has(known.SHA256) {
			continue
		}
		pctx, pcancel := context.WithCancel(actx)
		p := &aheadPatch{base: known.SHA256, out: newSpill(InlineLimit), cancel: pcancel, kept: make(chan struct{})}
		a.patches[it.key()] = p
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			defer pcancel()
			p.out.finish(tr.patch(pctx, p.out, p.base, it, p.report))
		}()
		if it.Source.SHA256 != "" {
			a.keepCopy(actx, tr.Store, p, it)
		}
	}
	a.ctx, a.store = actx, tr.Store
	return a
}

// keepCopy starts copying the item's source into the store and indexing
// it, for the next run's patch.
func (a *Ahead) keepCopy(ctx context.Context, store *delta.Store, p *aheadPatch, it Item) {
	p.keeping = true
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(p.kept)
		// Once this run's patch no longer needs the CPU: the copy and
		// its index, in one read of the source, for the next run's
		// patch.
		p.out.ended()
		keep(ctx, store, it)
	}()
}

// Resolved gives the patches Prepare started for sources not hashed yet
// the items as resolved, before Run: the patch of a source that turned
// out to be what the node has is dropped, and the copy of every other
// source goes into the store for the next run's patch.
func (a *Ahead) Resolved(items []Item) {
	if a == nil {
		return
	}
	for _, it := range items {
		p := a.patches[it.key()]
		if p == nil || p.keeping || it.Source == nil || it.Source.SHA256 == "" {
			continue
		}
		if strings.EqualFold(it.Source.SHA256, p.base) {
			p.drop()
			continue
		}
		a.keepCopy(a.ctx, a.store, p, it)
	}
}

// report passes the source bytes read so far on to the upload's
// progress, once Run took the patch.
func (p *aheadPatch) report(read int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.read = read
	if p.progress != nil {
		p.progress(read)
	}
}

// stop cancels what is still running, without waiting: files turned out
// to go as they are (a local network).
func (a *Ahead) stop() {
	if a != nil {
		a.cancel()
	}
}

// Close stops the patches still being made, waits for the copies of the
// sources kept for the next run's patch (the context Prepare was given
// still stops them), and returns once nothing runs: the swap does not
// wait for those copies, the run's end does.
func (a *Ahead) Close() {
	if a == nil {
		return
	}
	for _, p := range a.patches {
		p.drop()
	}
	for _, p := range a.patches {
		if p.keeping {
			<-p.kept
		}
	}
	a.cancel()
	a.wg.Wait()
}

// drop stops making the patch and frees what it holds.
func (p *aheadPatch) drop() {
	// A patch that was done before it was dropped is not taken later.
	p.mu.Lock()
	p.claimed = true
	p.mu.Unlock()
	p.cancel()
	p.out.drop()
}

// patch returns the item's patch made ahead against base, once: whole when it
// fits in InlineLimit (stream nil), else as a stream of the patch that
// continues as it is read (data nil); ok is false when there is none (not
// made ahead, made against another file, or it failed), and Run then
// makes it as it sends it. progress gets the source bytes read.
func (a *Ahead) patch(it Item, base string, progress func(int64)) (data []byte, stream io.ReadCloser, ok bool) {
	if a == nil {
		return nil, nil, false
	}
	p := a.patches[it.key()]
	if p == nil {
		return nil, nil, false
	}
	if p.base != base {
		// Made against a file the node no longer has.
		p.drop()
		return nil, nil, false
	}
	p.mu.Lock()
	if p.claimed {
		p.mu.Unlock()
		return nil, nil, false
	}
	p.claimed, p.progress = true, progress
	progress(p.read)
	p.mu.Unlock()
	data, whole, err := p.out.wait()
	switch {
	case err != nil:
		return nil, nil, false
	case whole:
		return data, nil, true
	}
	return nil, p.out, true
}

// stream returns the item's patch made ahead against base as a stream
// from its start, without waiting for it, once: it continues as the
// patch is made, and ends with the error that stopped it. ok is false
// when there is none (not made ahead, against another file, or taken).
func (a *Ahead) stream(it Item, base string) (io.ReadCloser, bool) {
	if a == nil {
		return nil, false
	}
	p := a.patches[it.key()]
	if p == nil || p.base != base {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.claimed {
		return nil, false
	}
	p.claimed = true
	return p.out, true
}

// made reports whether a patch of the item against base is being made
// (or was), without waiting for it.
func (a *Ahead) made(it Item, base string) bool {
	if a == nil {
		return false
	}
	p := a.patches[it.key()]
	return p != nil && p.base == base
}

// inline reports whether the item's patch made ahead against base is
// complete and fits in InlineLimit, waiting for it; it does not take it.
func (a *Ahead) inline(it Item, base string) bool {
	if a == nil {
		return false
	}
	p := a.patches[it.key()]
	if p == nil || p.base != base {
		return false
	}
	p.mu.Lock()
	claimed := p.claimed
	p.mu.Unlock()
	if claimed {
		return false
	}
	_, whole, err := p.out.wait()
	return err == nil && whole
}

// keeps reports whether the Ahead copies the item's source into the
// store (Close waits for that copy).
func (a *Ahead) keeps(it Item) bool {
	return a != nil && a.patches[it.key()] != nil && a.patches[it.key()].keeping
}

// keep copies the item's source into the store and indexes it, in one
// read, for the next run's patch; a failure only costs that patch.
func keep(ctx context.Context, s *delta.Store, it Item) {
	f, err := it.Source.Open()
	if err != nil {
		return
	}
	defer f.Close()
	_ = s.PutIndexed(ctx, it.Source.SHA256, f, it.Source.Size)
}

// errDropped ends an encoding nobody will read.
var errDropped = errors.New("the encoding made ahead was not used")

// spill holds an encoding as it is made: up to limit bytes until a reader
// takes it, then as a pipe with a buffer of limit bytes. The writer waits
// while it is full.
type spill struct {
	mu      sync.Mutex
	cond    *sync.Cond
	buf     []byte
	limit   int
	full    bool // the writer waits for room
	done    bool // the writer finished, with err
	err     error
	dropped bool
}

func newSpill(limit int) *spill {
	s := &spill{limit: limit}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// Write appends p, waiting while the buffer is full.
func (s *spill) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.dropped && len(s.buf) > 0 && len(s.buf)+len(p) > s.limit {
		s.full = true
		s.cond.Broadcast()
		s.cond.Wait()
	}
	s.full = false
	if s.dropped {
		return 0, errDropped
	}
	s.buf = append(s.buf, p...)
	s.cond.Broadcast()
	return len(p), nil
}

// ended waits until the encoding is complete, failed or dropped.
func (s *spill) ended() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.done && !s.dropped {
		s.cond.Wait()
	}
}

// finish ends the encoding with err (nil: complete).
func (s *spill) finish(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done, s.err = true, err
	s.cond.Broadcast()
}

// wait waits until the encoding is complete (whole: data is all of it) or
// fills the buffer (whole false: read it as a stream), or failed.
func (s *spill) wait() (data []byte, whole bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.done && !s.full {
		s.cond.Wait()
	}
	switch {
	case s.done && s.err != nil:
		return nil, false, s.err
	case s.done:
		return s.buf, true, nil
	}
	return nil, false, nil
}

// Read takes the encoding as a stream, after wait.
func (s *spill) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.buf) == 0 && !s.done && !s.dropped {
		s.cond.Wait()
	}
	if len(s.buf) == 0 {
		if s.dropped {
			return 0, errDropped
		}
		if s.err != nil {
			return 0, s.err
		}
		return 0, io.EOF
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	s.cond.Broadcast()
	return n, nil
}

// Close drops the rest of the encoding: the writer stops.
func (s *spill) Close() error {
	s.drop()
	return nil
}

func (s *spill) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropped = true
	s.cond.Broadcast()
}
