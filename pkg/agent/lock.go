package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The node's swap lock: one file, ops.LockPath, holding its owner. It is
// taken by renaming a complete file into place (a rename never replaces
// an existing file, on NTFS as in simnode, so two runs cannot both take
// it); its last-write time is the owner's heartbeat, renewed by rewriting
// it. A lock not renewed within its owner's StaleAfterMs, or whose owner
// the caller knows to be dead, may be broken.

// lockOps are the handlers of the lock ops.
var lockOps = []entry{
	handle(ops.NodeLockRenew, nodeLockRenew),
	handle(ops.NodeUnlock, nodeUnlock),
}

// lockDefaultStale is how long a lock whose file cannot be read (a torn
// write) counts as valid after its last write.
const lockDefaultStale = 2 * time.Minute

// lockRecord is the content of the lock file.
type lockRecord struct {
	Owner        ops.LockOwner `json:"owner"`
	StaleAfterMs int64         `json:"staleAfterMs"`
	Staged       []string      `json:"staged,omitempty"`
}

// nodeLock takes the lock, breaking a stale or dead holder's; a live
// holder is reported, not waited for (the caller waits, and says so).
func nodeLock(ctx context.Context, w winos.OS, req ops.NodeLockRequest) (ops.NodeLockResponse, error) {
	var resp ops.NodeLockResponse
	if req.Owner.RunID == "" || req.StaleAfterMs <= 0 {
		return resp, Fail(ops.KindBadRequest, "a lock request needs an owner's run ID and a positive staleAfterMs")
	}
	if err := footprint(w); err != nil {
		return resp, fmt.Errorf("the swap lock: %w", err)
	}
	rec := lockRecord{Owner: req.Owner, StaleAfterMs: req.StaleAfterMs, Staged: req.Staged}
	// A holder that releases or is broken meanwhile makes another round
	// necessary; a few are plenty.
	for range 3 {
		took, err := lockCreate(w, rec)
		if err != nil || took {
			resp.Acquired = took
			return resp, err
		}
		holder, err := lockRead(ctx, w)
		if err != nil {
			return resp, err
		}
		switch {
		case holder == nil:
			continue
		case holder.Owner.RunID == req.Owner.RunID:
			// Taken again by its own run (a retry after a lost answer).
			resp.Acquired = true
			if rec.Staged == nil {
				rec.Staged = holder.Staged
			}
			return resp, lockWrite(w, ops.LockPath, rec)
		case !holder.Stale() && holder.Owner.RunID != req.Break:
			resp.Holder = holder
			return resp, nil
		}
		// A swap agent outlives its swdt and its connection: while one
		// works, the lock is its run's, whatever became of that run.
		if busy, err := swapAgentWorks(ctx, w); err != nil || busy {
			resp.Holder = holder
			return resp, err
		}
		broke, removed, err := lockBreak(w, *holder, req.Destinations)
		if err != nil {
			return resp, err
		}
		if broke {
			resp.Broken, resp.Removed = holder, append(resp.Removed, removed...)
		}
	}
	holder, err := lockRead(ctx, w)
	if err != nil {
		return resp, err
	}
	resp.Holder = holder
	return resp, nil
}

// lockCreate tries to take the free lock: the record is written under a
// name of the caller's own and renamed into place.
func lockCreate(w winos.OS, rec lockRecord) (bool, error) {
	tmp := ops.LockPath + ".new-" + rec.Owner.RunID
	if err := lockWrite(w, tmp, rec); err != nil {
		return false, err
	}
	err := w.Rename(tmp, ops.LockPath)
	if err == nil {
		return true, nil
	}
	if rmErr := w.Remove(tmp); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
		return false, fmt.Errorf("remove %s: %w", tmp, rmErr)
	}
	if lockExists(err) {
		return false, nil
	}
	return false, fmt.Errorf("take the swap lock %s: %w", ops.LockPath, err)
}

// lockExists reports whether a rename failed because its target exists.
func lockExists(err error) bool {
	c := winos.Code(err)
	return c == winos.ErrAlreadyExists || c == winos.ErrFileExists
}

// lockWrite writes a lock record to p.
func lockWrite(w winos.OS, p string, rec lockRecord) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode the swap lock: %w", err)
	}
	if err := w.WriteFile(p, raw); err != nil {
		return fmt.Errorf("write the swap lock %s: %w", p, err)
	}
	return nil
}

// lockReread is how long after a lock file that cannot be decoded
// (caught mid-write) it is read again.
const lockReread = 20 * time.Millisecond

// lockRead returns the lock's holder, nil when the lock is free. A lock
// file that cannot be decoded (caught mid-write) is read again after
// lockReread; if it still cannot, it is an unknown holder, valid for
// lockDefaultStale after its last write.
func lockRead(ctx context.Context, w winos.OS) (*ops.LockHolder, error) {
	// A lock Administrators or SYSTEM do not own is no run's of swdt.
	if err := discardUntrusted(w, ops.LockPath, nil); err != nil {
		return nil, err
	}
	var holder *ops.LockHolder
	var age int64
	decoded, err := poll(ctx, lockReread, lockReread, func() (bool, error) {
		st, err := w.Stat(ops.LockPath)
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read the swap lock: %w", err)
		}
		raw, err := readSmallFile(w, ops.LockPath)
		if errors.Is(err, fs.ErrNotExist) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read the swap lock: %w", err)
		}
		age = max(time.Since(st.ModTime), 0).Milliseconds()
		var rec lockRecord
		if json.Unmarshal(raw, &rec) == nil && rec.Owner.RunID != "" {
			holder = &ops.LockHolder{Owner: rec.Owner, AgeMs: age, StaleAfterMs: rec.StaleAfterMs, Staged: rec.Staged}
			return true, nil
		}
		return false, nil
	})
	if err != nil || decoded {
		return holder, err
	}
	return &ops.LockHolder{Owner: ops.LockOwner{RunID: "unknown", Command: "an unreadable lock"}, AgeMs: age, StaleAfterMs: lockDefaultStale.Milliseconds()}, nil
}

// readSmallFile reads a file of swdt's own (a lock, a journal): at most
// 1 MiB, more is an error.
func readSmallFile(w winos.OS, p string) ([]byte, error) {
	f, err := w.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	const limit = 1 << 20
	raw, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if len(raw) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes: not written by swdt; delete it", p, limit)
	}
	return raw, nil
}

// lockBreak takes a stale lock away from holder: the lock file is first
// renamed to a name of its own, so that of two runs breaking it at once
// only one succeeds, and checked to be holder's (else it is put back).
// The holder's staged files are removed: no swap of its will use them
// (only those named <destination>.swdt-new-<its run ID> beside one of
// dests, whatever else the lock lists).
func lockBreak(w winos.OS, holder ops.LockHolder, dests []string) (bool, []string, error) {
	moved := ops.LockPath + ".broken-" + holder.Owner.RunID
	if err := w.Rename(ops.LockPath, moved); err != nil {
		if errors.Is(err, fs.ErrNotExist) || lockExists(err) {
			return false, nil, nil
		}
		return false, nil, fmt.Errorf("break the stale swap lock of %s: %w", holder.Owner, err)
	}
	raw, err := readSmallFile(w, moved)
	var rec lockRecord
	if err == nil && json.Unmarshal(raw, &rec) == nil && rec.Owner.RunID != holder.Owner.RunID && holder.Owner.RunID != "unknown" {
		// Another run took the lock meanwhile: give it back.
		if err := w.Rename(moved, ops.LockPath); err != nil && !lockExists(err) {
			return false, nil, fmt.Errorf("put back the swap lock of %s: %w", rec.Owner, err)
		}
		return false, nil, nil
	}
	if err := w.Remove(moved); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, nil, fmt.Errorf("remove the broken swap lock %s: %w", moved, err)
	}
	var removed []string
	for _, p := range holder.Staged {
		// Only the holder's own staged files beside a binary of the
		// caller's node file: the list is whatever the lock file said.
		if !stagedBeside(p, holder.Owner.RunID, dests) {
			continue
		}
		for _, f := range []string{p, ops.PartPath(p)} {
			if _, ok, err := provisionStatFile(w, f); err != nil || !ok {
				continue
			}
			if err := w.Remove(f); err == nil {
				removed = append(removed, f)
			}
		}
	}
	return true, removed, nil
}

// nodeLockRenew rewrites the caller's lock: its heartbeat.
func nodeLockRenew(ctx context.Context, w winos.OS, req ops.NodeLockRenewRequest) (ops.NodeLockRenewResponse, error) {
	holder, err := lockRead(ctx, w)
	if err != nil {
		return ops.NodeLockRenewResponse{}, err
	}
	if err := lockOwned(holder, req.RunID); err != nil {
		return ops.NodeLockRenewResponse{}, err
	}
	staged := holder.Staged
	if req.Staged != nil {
		staged = req.Staged
	}
	return ops.NodeLockRenewResponse{}, lockWrite(w, ops.LockPath, lockRecord{Owner: holder.Owner, StaleAfterMs: holder.StaleAfterMs, Staged: staged})
}

// lockOwned fails with kind "lock-lost" unless runID holds the lock.
func lockOwned(holder *ops.LockHolder, runID string) error {
	switch {
	case holder == nil:
		return Fail(ops.KindLockLost, "run %s no longer holds the node's swap lock (it is free: it was broken as stale); run again", runID)
	case holder.Owner.RunID != runID:
		return Fail(ops.KindLockLost, "run %s no longer holds the node's swap lock: %s took it after it went stale; run again", runID, holder.Owner)
	}
	return nil
}

// lockRenewEvery is how often an op that runs for a locked run (a swap)
// renews its lock, as swdt does while it waits for the op: swdt stops
// renewing while such an op runs, so that a renewal of its can never
// write the lock again after the op released it.
const lockRenewEvery = 10 * time.Second

// renewWhile renews runID's lock every lockRenewEvery until the returned
// function is called; that function waits for a renewal in progress. A
// renewal that fails is tried again at the next tick: the lock is lost
// only when another run broke it, which the op's own checks see.
func renewWhile(w winos.OS, runID string) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(lockRenewEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_, _ = nodeLockRenew(context.Background(), w, ops.NodeLockRenewRequest{RunID: runID})
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		<-finished
	})
}

// nodeUnlock releases the caller's lock; another run's is left alone.
func nodeUnlock(ctx context.Context, w winos.OS, req ops.NodeUnlockRequest) (ops.NodeUnlockResponse, error) {
	holder, err := lockRead(ctx, w)
	if err != nil || holder == nil || holder.Owner.RunID != req.RunID {
		return ops.NodeUnlockResponse{}, err
	}
	if err := removeFree(w, ops.LockPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return ops.NodeUnlockResponse{}, fmt.Errorf("release the swap lock %s: %w", ops.LockPath, err)
	}
	return ops.NodeUnlockResponse{Released: true}, nil
}

// lockCheck lets a swap or a repair go ahead: one by a locked run
// (runID set) only while that run holds the lock; one outside a locked
// run only while no other run holds a valid lock. Otherwise it fails
// with what was not done.
func lockCheck(ctx context.Context, w winos.OS, runID, what string) error {
	holder, err := lockRead(ctx, w)
	if err != nil {
		return err
	}
	if runID != "" {
		if err := lockOwned(holder, runID); err != nil {
			return swapNote(err, []string{what})
		}
		return nil
	}
	if holder == nil || holder.Stale() {
		return nil
	}
	return Fail(ops.KindLocked, "the node is locked by %s (renewed %d ms ago); %s", holder.Owner, holder.AgeMs, what)
}
