package hotswap

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
)

// Undoer is a Node that can put back the binary a swap replaced;
// *node.Node is one.
type Undoer interface {
	UndoSwap(ctx context.Context, req ops.SwapUndoRequest) (ops.ServiceSwapResponse, error)
}

// Undo puts back the old binary of the item name that report's run
// updated (the backup the swap kept), because of why: a check made after
// the run, such as the cluster's (DESIGN.md §4.3). The item's result
// becomes rolled-back with why as its error, or failed when the old
// binary could not be put back or did not start either. The run must be
// over: the undo op takes the node's lock for itself. An item that was
// not updated is left alone.
func Undo(ctx context.Context, n Undoer, report *Report, name, why string, opts Options) {
	opts.defaults()
	i := -1
	for k, res := range report.Results {
		if res.Name == name && res.Action == ActionUpdated && k < len(report.Plan.Steps) {
			i = k
		}
	}
	if i < 0 {
		return
	}
	step := report.Plan.Steps[i]
	it := step.Item
	req := ops.SwapUndoRequest{
		Lock: ops.NodeLockRequest{Owner: newOwner(opts.Command), StaleAfterMs: LockStaleAfter.Milliseconds()},
		Items: []ops.SwapUndoItem{{
			Service: it.Service, Destination: it.Destination, SHA256: strings.ToLower(it.Source.SHA256),
			Backup: it.Backup(), BackupSHA256: step.Current.SHA256, HealthChecks: it.HealthChecks,
		}},
		StopOrder: []string{it.Service}, StartOrder: []string{it.Service},
		StopTimeoutMs: int(opts.StopTimeout.Milliseconds()), StartTimeoutMs: int(opts.StartTimeout.Milliseconds()),
		SettleMs: int(opts.Settle.Milliseconds()), HealthTimeoutMs: int(opts.HealthTimeout.Milliseconds()),
	}
	res := &report.Results[i]
	undo := func(action Action, left string) {
		res.Action = action
		res.setErr(&ItemError{Err: errors.New(why), Left: []string{left}})
	}
	if !step.Current.Exists {
		undo(ActionFailed, "there is no old binary to go back to (the swap installed the first one)")
		return
	}
	opts.Observer.Step(fmt.Sprintf("rolling back %s: %s", it.Name, why))
	// Once stopped, the service must come back even if ctx is cancelled.
	uctx, cancel := UntilAbort(ctx, opts.Abort)
	defer cancel()
	resp, err := n.UndoSwap(uctx, req)
	switch {
	case err != nil:
		undo(ActionFailed, "the rollback failed: "+err.Error())
	case len(resp.Items) != 1:
		undo(ActionFailed, fmt.Sprintf("the rollback answered %d results for one binary", len(resp.Items)))
	case resp.Items[0].Result == ops.SwapResultRolledBack:
		undo(ActionRolledBack, "rolled back: the old binary runs again, the new one was kept as "+ops.FailedPath(it.Destination))
		if f := resp.Items[0].File; f != nil {
			opts.Hashes.Remember(it.Destination, *f)
		}
	default:
		undo(ActionFailed, "the old binary was put back but: "+resp.Items[0].Error)
	}
}
