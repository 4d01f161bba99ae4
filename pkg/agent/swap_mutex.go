package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// One agent per swap. OpenSSH for Windows does not end an agent whose
// connection dropped: it runs on to the end of its op. swdt, which saw
// the connection drop, repairs at once, with the same run ID: without
// more, two agents would work on one journal, undo each other, and a swap
// that succeeded could be reported as failed. So the swap op holds the
// node-wide named mutex ops.SwapMutex for its whole life; the repair
// waits on it before it reads the journal (an abandoned mutex means the
// swap's agent died: the journal says what is left), and a repair that
// finds no journal reports the result the swap left (ops.SwapResultPath).

// How long the ops wait for the swap mutex. A swap waits for a repair
// that still runs; a repair for a swap that runs on after its connection
// dropped, which its own timeouts bound.
const (
	swapMutexWait   = 2 * time.Minute
	repairMutexWait = 10 * time.Minute
)

// lockSwapMutex takes ops.SwapMutex, waiting up to wait. It is a
// "busy" failure when another agent keeps it; what says what was not
// done then.
func lockSwapMutex(ctx context.Context, w winos.OS, wait time.Duration, what string) (func(), bool, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	unlock, abandoned, err := w.LockMutex(wctx, ops.SwapMutex)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return nil, false, Fail(ops.KindBusy, "another swdt-agent has been working on this node's swap for %s (it holds the mutex Global\\%s); %s: "+
			"run swdt again once it has finished (Get-Process swdt-agent* shows it)", wait, ops.SwapMutex, what)
	}
	if errors.Is(err, winos.ErrInvalidOwner) {
		return nil, false, Fail(ops.KindAccessDenied, "%v: an account that is not an administrator made swdt's swap mutex and holds it, which stops every swap; %s: "+
			"end that account's processes (or reboot the node) and run swdt again", err, what)
	}
	if err != nil {
		return nil, false, fmt.Errorf("wait for the swap mutex Global\\%s: %w; %s", ops.SwapMutex, err, what)
	}
	return unlock, abandoned, nil
}

// swapResultSave records what a swap op of run runID answers, for a
// repair of that run that finds the swap finished.
func swapResultSave(w winos.OS, runID string, resp ops.ServiceSwapResponse, swapErr error) error {
	if runID == "" {
		return nil
	}
	r := ops.SwapFinished{RunID: runID}
	if swapErr == nil {
		r.Response = &resp
	} else {
		r.Kind, r.Error = failureOf(swapErr)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode the swap's result: %w", err)
	}
	if err := w.WriteFile(ops.SwapResultPath, raw); err != nil {
		return fmt.Errorf("record the swap's result: %w", err)
	}
	return nil
}

// swapResultTake returns (and removes) the result the swap of run runID
// left, nil when there is none.
func swapResultTake(w winos.OS, runID string) (*ops.SwapFinished, error) {
	if runID == "" {
		return nil, nil
	}
	raw, err := readSmallFile(w, ops.SwapResultPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the swap's result: %w", err)
	}
	var r ops.SwapFinished
	if err := json.Unmarshal(raw, &r); err != nil || r.RunID != runID {
		// Another run's, or torn: not this run's swap.
		return nil, nil
	}
	if err := removeFree(w, ops.SwapResultPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove the swap's result: %w", err)
	}
	return &r, nil
}

// swapAgentWorks reports whether an agent holds the swap mutex now (a
// swap or a repair runs), without waiting for it.
func swapAgentWorks(ctx context.Context, w winos.OS) (bool, error) {
	tctx, cancel := context.WithCancel(ctx)
	cancel()
	unlock, _, err := w.LockMutex(tctx, ops.SwapMutex)
	if err == nil {
		unlock()
		return false, nil
	}
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		return true, nil
	}
	return false, fmt.Errorf("look at the swap mutex Global\\%s: %w", ops.SwapMutex, err)
}
