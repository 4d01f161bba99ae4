package hotswap

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/source"
)

// undoNode answers swap-undo as scripted and records the request.
type undoNode struct {
	resp ops.ServiceSwapResponse
	err  error
	reqs []ops.SwapUndoRequest
}

func (u *undoNode) UndoSwap(_ context.Context, req ops.SwapUndoRequest) (ops.ServiceSwapResponse, error) {
	u.reqs = append(u.reqs, req)
	return u.resp, u.err
}

// Undo asks the node to put back the backup of the item it names (the
// binary the run swapped in, the one it replaced), and reports the
// outcome in the item's result with the caller's reason.
func TestUndo(t *testing.T) {
	const why = "the cluster did not confirm the new kubelet"
	oldFile := &ops.FileInfo{Path: `C:\k\kubelet.exe`, Exists: true, Size: 3, SHA256: "0ld", ModTicks: 7}
	tests := []struct {
		name string
		// action is the item's result before the undo; current what the
		// run found at its destination.
		action  Action
		current ops.FileInfo
		resp    ops.ServiceSwapResponse
		err     error
		// asked is whether swap-undo is sent.
		asked      bool
		wantAction Action
		wantError  string
		remembered bool
	}{
		{name: "put back", action: ActionUpdated, current: ops.FileInfo{Exists: true, SHA256: "0ld"}, asked: true,
			resp:       ops.ServiceSwapResponse{Items: []ops.SwapItemResult{{Result: ops.SwapResultRolledBack, File: oldFile}}},
			wantAction: ActionRolledBack, wantError: why + `; rolled back: the old binary runs again, the new one was kept as C:\k\kubelet.exe.swdt-failed`, remembered: true},
		{name: "the old binary fails too", action: ActionUpdated, current: ops.FileInfo{Exists: true, SHA256: "0ld"}, asked: true,
			resp:       ops.ServiceSwapResponse{Items: []ops.SwapItemResult{{Result: ops.SwapResultFailed, Error: "service stopped again"}}},
			wantAction: ActionFailed, wantError: why + "; the old binary was put back but: service stopped again"},
		{name: "the op refuses", action: ActionUpdated, current: ops.FileInfo{Exists: true, SHA256: "0ld"}, asked: true,
			err: errors.New("the node is locked by another run; nothing was rolled back"), wantAction: ActionFailed, wantError: why + "; the rollback failed: the node is locked"},
		{name: "a first install has nothing to go back to", action: ActionUpdated, wantAction: ActionFailed, wantError: "there is no old binary to go back to"},
		{name: "an item the run did not update is left alone", action: ActionUnchanged, current: ops.FileInfo{Exists: true, SHA256: "0ld"}, wantAction: ActionUnchanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it := Item{Name: "kubelet", Service: "kubelet", Destination: `C:\k\kubelet.exe`, Source: &source.File{SHA256: "NEW"},
				HealthChecks: []ops.HealthCheckSpec{{TCPPort: 10250}}}
			report := &Report{
				Plan:    &Plan{Steps: []Step{{Item: it, Action: ActionUpdate, Current: tt.current}}},
				Results: []Result{{Name: "kubelet", Action: tt.action}},
			}
			n := &undoNode{resp: tt.resp, err: tt.err}
			hashes := &mapHashes{m: map[string]ops.FileInfo{}}
			Undo(context.Background(), n, report, "kubelet", why, Options{Command: "swdt kubernetes", Hashes: hashes})
			res := report.Results[0]
			if res.Action != tt.wantAction || !strings.Contains(res.Error, tt.wantError) {
				t.Errorf("result = %s %q; want %s with %q", res.Action, res.Error, tt.wantAction, tt.wantError)
			}
			if (len(n.reqs) == 1) != tt.asked {
				t.Fatalf("swap-undo sent %d times, want asked=%v", len(n.reqs), tt.asked)
			}
			if tt.asked {
				req := n.reqs[0]
				want := ops.SwapUndoItem{Service: "kubelet", Destination: it.Destination, SHA256: "new", Backup: it.Backup(), BackupSHA256: "0ld", HealthChecks: it.HealthChecks}
				if len(req.Items) != 1 || req.Items[0].Backup != want.Backup || req.Items[0].SHA256 != want.SHA256 || req.Items[0].BackupSHA256 != want.BackupSHA256 ||
					len(req.Items[0].HealthChecks) != 1 || req.Lock.Owner.RunID == "" || req.Lock.Owner.Command != "swdt kubernetes" || req.Lock.StaleAfterMs <= 0 {
					t.Errorf("request = %+v, want item %+v under a lock of its own", req, want)
				}
			}
			if got := hashes.Known(it.Destination); (got != nil) != tt.remembered || got != nil && got.SHA256 != "0ld" {
				t.Errorf("hash cache = %+v, want the old binary remembered: %v", got, tt.remembered)
			}
		})
	}
}
