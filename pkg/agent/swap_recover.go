package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The swap-recover op finishes or rolls back the swap the node's journal
// records: one cut short by a killed swdt, a lost connection or a crash
// of the agent. It decides per item from what is on disk, not from how
// far the journal says the swap got:
//
//   - the destination holds the swap's verified new binary: the swap is
//     finished for it, that is, its service is started and must pass the
//     settle period and its health checks like in the swap, else it is
//     rolled back to its backup;
//   - otherwise a missing destination gets its backup back (the old
//     binary), and a destination that holds anything else is left alone;
//
// staged files are removed, every service the swap stopped and every one
// it was to start is started, the failure actions it switched off are put
// back, and the journal is removed. A repair that is itself cut short
// leaves the journal, and the next one starts over: each step is
// idempotent.

// nothingRepaired is what a repair that failed before it changed
// anything says.
const nothingRepaired = "nothing was repaired"

// swapRecover repairs the node's unfinished swap, if it has one.
func swapRecover(ctx context.Context, w winos.OS, req ops.SwapRecoverRequest) (ops.SwapRecoverResponse, error) {
	resp := ops.SwapRecoverResponse{Items: []ops.SwapRecoverItem{}, Started: []string{}, NotStarted: []ops.ServiceProblem{}, Removed: []string{}}
	// A swap whose connection dropped may still run: it goes first.
	unlock, _, err := lockSwapMutex(ctx, w, repairMutexWait, nothingRepaired)
	if err != nil {
		return resp, err
	}
	defer unlock()
	if err := footprint(w); err != nil {
		return resp, fmt.Errorf("%s: %w", nothingRepaired, err)
	}
	j, err := journalRead(w, &resp.Ignored)
	if err != nil {
		return resp, err
	}
	if j == nil {
		// The run's swap finished (and released the run's lock).
		if resp.Finished, err = swapResultTake(w, req.RunID); err != nil {
			return resp, err
		}
	}
	if resp.Finished == nil {
		if err := lockCheck(ctx, w, req.RunID, nothingRepaired); err != nil {
			return resp, err
		}
	}
	if j != nil {
		resp.Found, resp.Journal = true, j
		// Only what a run of this node file could have written is acted
		// on, with this node file's health checks.
		var ignored []string
		j.Request.Items, ignored = trustedItems(j.Request.Items, req.Trusted, j.Request.Undo)
		j.Request.ServiceChecks = nil
		resp.Ignored = append(resp.Ignored, ignored...)
		if err := resume(ctx, w, j, &resp); err != nil {
			return resp, err
		}
	}
	for _, p := range req.Staged {
		if err := swapRemoveFile(w, p, &resp.Removed); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

// swapRemoveFile removes p if it is there, and lists it in removed.
func swapRemoveFile(w winos.OS, p string, removed *[]string) error {
	if _, ok, err := provisionStatFile(w, p); err != nil || !ok {
		return err
	}
	if err := w.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the staged file %s: %w", p, err)
	}
	*removed = append(*removed, p)
	return nil
}

// resume is the repair of journal j (see the top of this file).
func resume(ctx context.Context, w winos.OS, j *ops.SwapJournal, resp *ops.SwapRecoverResponse) error {
	s := newSwapRun(w, j.Request)
	s.journal = j
	if s.journal.Failures == nil {
		s.journal.Failures = map[string]string{}
	}
	for _, name := range j.Stopped {
		s.markedStopped(name, 0)
	}
	for _, jr := range j.Recovery {
		r := fromJournal(jr)
		s.keepRecovery(r.service, r.recovery)
	}
	items := s.req.Items
	binary := make([]string, len(items))
	for i, it := range items {
		s.items[i].result.Result = ops.SwapResultRolledBack
		var err error
		if binary[i], err = s.settleFiles(it, &resp.Removed); err != nil {
			return err
		}
		if binary[i] == ops.RecoveredNew {
			s.items[i].result.Result = ops.SwapResultSwapped
		}
	}

	wasRunning := map[svcKey]bool{}
	start := s.startList()
	for _, name := range start {
		svc, err := w.Service(name)
		switch {
		case err != nil:
		case svc.Status == winos.StatusRunning && !svc.ProcessExited:
			wasRunning[keyOf(name)] = true
		case svc.Status == winos.StatusStopPending:
			// Killed after the stop control: the stop is finished (its
			// process killed if it hangs) before the service can start.
			if err := s.stop(ctx, name); err != nil {
				return err
			}
		}
	}
	if err := s.startAll(ctx, start); err != nil {
		return err
	}
	if err := s.healthAll(ctx, start); err != nil {
		return err
	}
	rollback := false
	for i, it := range items {
		if s.failure(it.Service) == nil || s.items[i].result.Result != ops.SwapResultSwapped || j.Request.Undo {
			continue
		}
		if _, ok, err := provisionStatFile(w, it.Backup); err != nil {
			return err
		} else if ok {
			s.items[i].rollback, rollback = true, true
		}
	}
	if rollback {
		if err := s.rollback(ctx, start); err != nil {
			return err
		}
		start = s.startList()
	}

	for _, name := range start {
		if f := s.failure(name); f != nil {
			resp.NotStarted = append(resp.NotStarted, ops.ServiceProblem{Service: name, Error: f.String()})
		} else if !wasRunning[keyOf(name)] {
			resp.Started = append(resp.Started, name)
		}
	}
	for i, it := range items {
		out := ops.SwapRecoverItem{Service: it.Service, Destination: it.Destination, Binary: binary[i]}
		if j.Request.Undo {
			out.Binary = undoneBinary(binary[i])
		}
		rolling := j.Failures[string(keyOf(it.Service))]
		switch f := s.failure(it.Service); {
		case s.items[i].rollback:
			out.Binary, out.Error = ops.RecoveredOld, s.items[i].result.Error
		case binary[i] == ops.RecoveredOld && rolling != "":
			out.Error = "the swap was rolling it back: " + rolling
		case f != nil:
			out.Error = f.String()
		}
		if info, err := provisionFileFacts(w, it.Destination, false, nil); err == nil && info.Exists {
			out.SHA256 = info.SHA256
		}
		resp.Items = append(resp.Items, out)
	}
	resp.RecoveryNotRestored = s.restoreRecovery()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return journalRemove(w)
}

// settleFiles puts an item's files in order before the services start,
// and says which binary is now at its destination: the new one (to be
// tried), the old one (the backup put back), none, or an unknown one.
// The staged file is removed.
func (s *swapRun) settleFiles(it ops.SwapItem, removed *[]string) (string, error) {
	dest, err := provisionFileFacts(s.w, it.Destination, false, nil)
	if err != nil {
		return "", err
	}
	_, hasBackup, err := provisionStatFile(s.w, it.Backup)
	if err != nil {
		return "", err
	}
	binary := ops.RecoveredUnknown
	switch {
	case dest.Exists && it.SHA256 != "" && strings.EqualFold(dest.SHA256, it.SHA256):
		binary = ops.RecoveredNew
	case dest.Exists && (it.OldSHA256 == "" || strings.EqualFold(dest.SHA256, it.OldSHA256)):
		binary = ops.RecoveredOld
	case dest.Exists:
	case hasBackup:
		// Killed between its two renames, or half-way through a
		// rollback: the old binary goes back (only swdt's backup: one
		// another account owns is never put into place).
		if owner, ok, err := adminsOwn(s.w, it.Backup); err != nil {
			return "", err
		} else if !ok {
			return "", Fail(ops.KindUntrustedBackup, "%s is missing and %s is owned by %s, not by Administrators or SYSTEM: it is not swdt's backup "+
				"and was left alone; put the right binary at %s as an administrator and run again", it.Destination, it.Backup, owner, it.Destination)
		}
		if err := s.w.Rename(it.Backup, it.Destination); err != nil {
			return "", fmt.Errorf("put back %s from %s: %w", it.Destination, it.Backup, err)
		}
		binary = ops.RecoveredOld
	default:
		// A first install (nothing to go back to): finish it when the
		// staged file is the verified one.
		binary = ops.RecoveredMissing
		staged, err := provisionFileFacts(s.w, it.Staged, false, nil)
		if err != nil {
			return "", err
		}
		if staged.Exists && it.SHA256 != "" && strings.EqualFold(staged.SHA256, it.SHA256) {
			if _, ok, err := adminsOwn(s.w, it.Staged); err != nil || !ok {
				return binary, err
			}
			if err := s.w.Rename(it.Staged, it.Destination); err != nil {
				return "", fmt.Errorf("put the staged %s into place: %w", it.Staged, err)
			}
			binary = ops.RecoveredNew
		}
	}
	if s.req.Undo {
		// An undo's staged file is the backup of the swap it undoes.
		return binary, nil
	}
	if err := swapRemoveFile(s.w, it.Staged, removed); err != nil {
		return "", err
	}
	return binary, nil
}

// undoneBinary names the binary an undo's repair left as the user knows
// it: the undo's new binary is the old one it put back.
func undoneBinary(binary string) string {
	switch binary {
	case ops.RecoveredNew:
		return ops.RecoveredOld
	case ops.RecoveredOld:
		return ops.RecoveredNew
	}
	return binary
}
