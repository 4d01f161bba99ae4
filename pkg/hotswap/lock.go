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

	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/pkg/ops"
)

// The client side of the node's swap lock (the agent's lock ops decide who
// holds it): a run takes it in the op that inspects, renews it while it
// works and has the swap op release it at the end, so that two runs
// against one node never stage or swap at the same time.

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
	return ops.LockOwner{RunID: hex.EncodeToString(id[:]), Host: host, PID: os.Getpid(), PIDSpace: pidSpace(), PIDStart: processStart(os.Getpid()),
		Command: command, Started: time.Now().UTC().Format(time.RFC3339)}
}

// heldLock is a lock this run holds: it is renewed in the background
// until release, except while an op that renews it itself (the swap)
// runs.
type heldLock struct {
	n     Node
	owner ops.LockOwner
	// stop and done are the renewing goroutine's (nil while paused).
	stop context.CancelFunc
	done chan struct{}
	// released is true once the node released the lock (the swap did).
	released bool
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
// working: its process runs (the same process: started when o says) and,
// when that is this process, the run has not ended.
func ownerAlive(o ops.LockOwner) bool {
	if o.PID == os.Getpid() && (o.PIDStart == "" || o.PIDStart == processStart(o.PID)) {
		liveRuns.Lock()
		defer liveRuns.Unlock()
		return liveRuns.ids[o.RunID]
	}
	if !processAlive(o.PID) {
		return false
	}
	if start := processStart(o.PID); o.PIDStart != "" && start != "" && start != o.PIDStart {
		return false // the PID now names a later process
	}
	return true
}

// samePIDSpace reports whether holder's PID can be checked from here:
// the same host name and the same PID space. A holder elsewhere (another
// container, another boot) is alive as long as it renews the lock.
func samePIDSpace(holder, self ops.LockOwner) bool {
	return holder.Host == self.Host && holder.PIDSpace == self.PIDSpace
}

// lockAndInspect takes the node's lock for owner, recording the files the
// run may stage, and inspects targets under it, in one op. It waits up
// to opts.LockWait (saying so) while another live run holds the lock; a
// holder that is this machine's and is not alive (a killed swdt, or an
// ended run of this process) is broken at once.
func lockAndInspect(ctx context.Context, n Node, owner ops.LockOwner, staged []string, targets []ops.ProvisionTarget, opts Options) (held *heldLock, found ops.ProvisionInspectResponse, err error) {
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
	dests := make([]string, len(targets))
	for i, t := range targets {
		dests[i] = t.Destination
	}
	for {
		got, ierr := n.InspectLocked(ctx, ops.NodeLockRequest{Owner: owner, StaleAfterMs: LockStaleAfter.Milliseconds(), Break: breakID, Staged: staged, Destinations: dests}, targets)
		if ierr != nil {
			return nil, got, fmt.Errorf("take the node's swap lock and inspect: %w", ierr)
		}
		found = got
		resp := found.Locked
		if resp == nil {
			return nil, found, errors.New("take the node's swap lock: the node did not answer the lock request")
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
			l := &heldLock{n: n, owner: owner}
			l.renew()
			return l, found, nil
		}
		h := resp.Holder
		if h == nil {
			continue
		}
		if samePIDSpace(h.Owner, owner) && !ownerAlive(h.Owner) {
			breakID = h.Owner.RunID
			continue
		}
		waited := time.Since(started)
		if waited >= opts.LockWait {
			return nil, found, &LockedError{Holder: *h, Waited: waited}
		}
		if announced != h.Owner.RunID {
			announced = h.Owner.RunID
			opts.Observer.Step(fmt.Sprintf("waiting for the node's swap lock, held by %s (up to %s)", h.Owner, opts.LockWait))
		}
		if err := retry.Sleep(ctx, lockPoll); err != nil {
			return nil, found, fmt.Errorf("waiting for the node's swap lock held by %s: %w", h.Owner, err)
		}
	}
}

// renew starts renewing the lock every LockRenewEvery, until pause or
// release. A failed renewal is tried again at the next tick: the swap
// itself checks that the run still holds the lock.
func (l *heldLock) renew() {
	if l.stop != nil || l.released {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	l.stop, l.done = stop, done
	go func() {
		defer close(done)
		t := time.NewTicker(LockRenewEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				rctx, cancel := context.WithTimeout(ctx, lockOpLimit)
				_ = l.n.RenewLock(rctx, l.owner.RunID, nil)
				cancel()
			}
		}
	}()
}

// pause stops renewing, waiting for a renewal in progress: the swap op
// renews the lock while it runs and may release it, and no renewal of
// swdt's may write it again after that.
func (l *heldLock) pause() {
	if l.stop == nil {
		return
	}
	l.stop()
	<-l.done
	l.stop, l.done = nil, nil
}

// release stops renewing and releases the lock, unless the swap op did.
// It runs after a Ctrl-C too, so it has a bound of its own.
func (l *heldLock) release() {
	l.pause()
	if !l.released {
		ctx, cancel := context.WithTimeout(context.Background(), lockOpLimit)
		defer cancel()
		_ = l.n.Unlock(ctx, l.owner.RunID)
	}
	setLive(l.owner.RunID, false)
}

// opFailed reports whether err is an op that ran on the node and said
// no (as opposed to a transport failure, worth another try).
func opFailed(err error, kind ops.Kind) bool {
	var oe *ops.Error
	return errors.As(err, &oe) && (kind == "" || oe.Kind == kind)
}
