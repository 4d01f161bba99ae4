package hotswap

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
)

// The client side of the node's swap lock (the agent's lock ops decide who
// holds it): a run takes it before it inspects, renews it while it works
// and releases it at the end, so that two runs against one node never
// stage or swap at the same time.

// Lock timings. A holder renews every LockRenewEvery; a lock not renewed
// for LockStaleAfter is stale and may be broken by another run.
const (
	LockRenewEvery  = 10 * time.Second
	LockStaleAfter  = 2 * time.Minute
	DefaultLockWait = 5 * time.Minute
	lockOpLimit     = 30 * time.Second
)

// lockPoll is the pause between asks for a held lock (a variable for
// tests).
var lockPoll = time.Second

// LockedError is a node that another run kept locked for longer than the
// run was willing to wait.
type LockedError struct {
	Holder ops.LockHolder
	Waited time.Duration
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("the node is locked by %s, renewed %s ago; gave up after waiting %s: run again when that run has finished "+
		"(a lock not renewed for %s is stale and taken over; raise --lock-wait to wait longer)",
		e.Holder.Owner, (time.Duration(e.Holder.AgeMs) * time.Millisecond).Round(time.Second), e.Waited.Round(time.Second), LockStaleAfter)
}

// newOwner describes this run.
func newOwner(command string) ops.LockOwner {
	var id [6]byte
	_, _ = rand.Read(id[:])
	host, _ := os.Hostname()
	return ops.LockOwner{RunID: hex.EncodeToString(id[:]), Host: host, PID: os.Getpid(), Command: command, Started: time.Now().UTC().Format(time.RFC3339)}
}

// heldLock is a lock this run holds: it is renewed in the background
// until release.
type heldLock struct {
	n     Node
	owner ops.LockOwner
	stop  context.CancelFunc
	done  chan struct{}

	mu     sync.Mutex
	staged []string
}

// liveRuns are the runs of this process that ask for or hold a node's
// lock, by run ID. A lock that names this process but none of them was
// left by a run that has ended: swdt kubernetes --watch after a VM was
// reverted to a --snapshot snapshot, which was taken while the lock was
// held.
var liveRuns = struct {
	sync.Mutex
	ids map[string]bool
}{ids: map[string]bool{}}

// setLive records whether run id of this process is live.
func setLive(id string, live bool) {
	liveRuns.Lock()
	defer liveRuns.Unlock()
	if live {
		liveRuns.ids[id] = true
	} else {
		delete(liveRuns.ids, id)
	}
}

// ownerAlive reports whether the run o of this machine may still be
// working: its process runs and, when that is this process, the run has
// not ended.
func ownerAlive(o ops.LockOwner) bool {
	if o.PID == os.Getpid() {
		liveRuns.Lock()
		defer liveRuns.Unlock()
		return liveRuns.ids[o.RunID]
	}
	return processAlive(o.PID)
}

// lockNode takes the node's lock for owner, waiting up to opts.LockWait
// (saying so) while another live run holds it. A holder that is this
// machine's and is not alive (a killed swdt, or an ended run of this
// process) is broken at once.
func lockNode(ctx context.Context, n Node, owner ops.LockOwner, opts Options) (held *heldLock, err error) {
	// Live before the node is asked: another run of this process must
	// never take this one's fresh lock for a dead one.
	setLive(owner.RunID, true)
	defer func() {
		if err != nil {
			setLive(owner.RunID, false)
		}
	}()
	started := time.Now()
	announced := ""
	breakID := ""
	for {
		lctx, cancel := context.WithTimeout(ctx, lockOpLimit)
		resp, err := n.Lock(lctx, ops.NodeLockRequest{Owner: owner, StaleAfterMs: LockStaleAfter.Milliseconds(), Break: breakID})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("take the node's swap lock: %w", err)
		}
		if resp.Broken != nil {
			msg := fmt.Sprintf("took over the swap lock of %s (not renewed for %s, or its process is gone)", resp.Broken.Owner,
				(time.Duration(resp.Broken.AgeMs) * time.Millisecond).Round(time.Second))
			if len(resp.Removed) > 0 {
				msg += fmt.Sprintf("; removed %d file(s) it had staged", len(resp.Removed))
			}
			opts.Observer.Step(msg)
		}
		if resp.Acquired {
			return startRenewing(n, owner), nil
		}
		h := resp.Holder
		if h == nil {
			continue
		}
		if h.Owner.Host == owner.Host && !ownerAlive(h.Owner) {
			breakID = h.Owner.RunID
			continue
		}
		waited := time.Since(started)
		if waited >= opts.LockWait {
			return nil, &LockedError{Holder: *h, Waited: waited}
		}
		if announced != h.Owner.RunID {
			announced = h.Owner.RunID
			opts.Observer.Step(fmt.Sprintf("waiting for the node's swap lock, held by %s (up to %s)", h.Owner, opts.LockWait))
		}
		if err := sleepCtx(ctx, lockPoll); err != nil {
			return nil, fmt.Errorf("waiting for the node's swap lock held by %s: %w", h.Owner, err)
		}
	}
}

// startRenewing renews the lock every LockRenewEvery until release. A
// failed renewal is tried again at the next tick: the swap itself checks
// that the run still holds the lock.
func startRenewing(n Node, owner ops.LockOwner) *heldLock {
	ctx, stop := context.WithCancel(context.Background())
	l := &heldLock{n: n, owner: owner, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		t := time.NewTicker(LockRenewEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(ctx, lockOpLimit)
				_ = n.RenewLock(rctx, owner.RunID, nil)
				cancel()
			}
		}
	}()
	return l
}

// stage records the files the run is about to stage, so that a run that
// breaks this lock after a crash removes them.
func (l *heldLock) stage(ctx context.Context, paths []string) error {
	rctx, cancel := context.WithTimeout(ctx, lockOpLimit)
	defer cancel()
	if err := l.n.RenewLock(rctx, l.owner.RunID, paths); err != nil {
		return fmt.Errorf("record the staged files in the node's swap lock: %w", err)
	}
	return nil
}

// release stops renewing and releases the lock. It runs after a Ctrl-C
// too, so it has a bound of its own.
func (l *heldLock) release() {
	l.stop()
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), lockOpLimit)
	defer cancel()
	_ = l.n.Unlock(ctx, l.owner.RunID)
	setLive(l.owner.RunID, false)
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// opFailed reports whether err is an op that ran on the node and said
// no (as opposed to a transport failure, worth another try).
func opFailed(err error, kind string) bool {
	var oe *node.OpError
	return errors.As(err, &oe) && (kind == "" || oe.Kind == kind)
}
