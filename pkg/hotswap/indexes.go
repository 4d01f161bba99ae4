package hotswap

import (
	"context"
	"strings"
	"sync"

	"sigs.k8s.io/swdt/pkg/delta"
)

// Indexes keeps, between the runs of one process (--watch), the index of
// the store's copy of what each destination holds, built in the
// background once a run has put it there: the next rebuild's patch then
// only scans the new build. Safe for concurrent use; the zero value is
// not usable, see NewIndexes. A nil *Indexes keeps nothing.
type Indexes struct {
	mu sync.Mutex
	// byDigest are the indexes built or being built.
	byDigest map[string]*builtIndex
	// dest maps a destination (lower case) to the digest indexed for it.
	dest map[string]string
	// building counts the goroutines that build or drop an index; Close
	// waits for them, and after it (closed) nothing is kept.
	building sync.WaitGroup
	closed   bool
}

// builtIndex is one index, ready once ready is closed: the store's,
// shared with the other nodes of the run (delta.Store.AcquireIndex).
type builtIndex struct {
	ready   chan struct{}
	cancel  context.CancelFunc
	x       *delta.Index // nil when building failed
	release func()
	users   int // destinations using it
}

// NewIndexes makes an empty Indexes.
func NewIndexes() *Indexes {
	return &Indexes{byDigest: map[string]*builtIndex{}, dest: map[string]string{}}
}

// Keep starts indexing the store's copy of digest, the file destination
// holds now, and drops the index kept for what destination held before
// (unless another destination holds that too). The index is built on
// ctx; after Close, Keep keeps nothing.
func (c *Indexes) Keep(ctx context.Context, store *delta.Store, destination, digest string) {
	if c == nil || store == nil || digest == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	key := strings.ToLower(destination)
	if old, ok := c.dest[key]; ok {
		if old == digest {
			return
		}
		c.releaseLocked(old)
	}
	c.dest[key] = digest
	if b := c.byDigest[digest]; b != nil {
		b.users++
		return
	}
	bctx, cancel := context.WithCancel(ctx)
	b := &builtIndex{ready: make(chan struct{}), cancel: cancel, users: 1}
	c.byDigest[digest] = b
	c.building.Go(func() {
		defer close(b.ready)
		x, release, err := store.AcquireIndex(bctx, digest)
		if err != nil {
			return
		}
		b.x, b.release = x, release
	})
}

// releaseLocked drops one destination's use of digest's index.
func (c *Indexes) releaseLocked(digest string) {
	b := c.byDigest[digest]
	if b == nil {
		return
	}
	if b.users--; b.users > 0 {
		return
	}
	delete(c.byDigest, digest)
	b.cancel()
	c.building.Go(func() {
		<-b.ready
		if b.release != nil {
			b.release()
		}
	})
}

// index returns the index of digest's copy, waiting while it is built;
// nil when there is none (never kept, or building failed).
func (c *Indexes) index(ctx context.Context, digest string) *delta.Index {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	b := c.byDigest[digest]
	c.mu.Unlock()
	if b == nil {
		return nil
	}
	select {
	case <-b.ready:
		return b.x
	case <-ctx.Done():
		return nil
	}
}

// Close drops every index and returns once the goroutines that build
// or drop them have ended.
func (c *Indexes) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.closed = true
	for d := range c.byDigest {
		c.byDigest[d].users = 1
		c.releaseLocked(d)
	}
	clear(c.dest)
	c.mu.Unlock()
	c.building.Wait()
}
