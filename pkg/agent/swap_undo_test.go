package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// undoSetup swaps newContent into kubelet as a run does, and returns the
// undo request of that swap (run "u") and the old binary.
func undoSetup(t *testing.T, ts *simnode.TestServer, newContent string) (ops.SwapUndoRequest, []byte) {
	t.Helper()
	n, w := ts.Node(), ts.Node().OS()
	old, err := n.ReadFile(swapKubelet)
	if err != nil {
		t.Fatal(err)
	}
	it := swapStage(t, n, "kubelet", swapKubelet, []byte(newContent))
	resp, err := agent.Call(context.Background(), w, ops.ServiceSwap, swapKubeletRequest(it))
	if err != nil || resp.Items[0].Result != ops.SwapResultSwapped {
		t.Fatalf("swap: %+v, %v", resp, err)
	}
	req := ops.SwapUndoRequest{
		Lock: ops.NodeLockRequest{Owner: lockOwner("u"), StaleAfterMs: time.Minute.Milliseconds()},
		Items: []ops.SwapUndoItem{{Service: "kubelet", Destination: swapKubelet, SHA256: provSum([]byte(newContent)),
			Backup: it.Backup, BackupSHA256: provSum(old)}},
		StopOrder: []string{"kubelet"}, StartOrder: []string{"kubelet"},
		StopTimeoutMs: 300, StartTimeoutMs: 2000, SettleMs: 150, HealthTimeoutMs: 300,
	}
	return req, old
}

// swap-undo puts the old binary back (the undone one kept as
// .swdt-failed) and starts the service and its dependents again; it
// refuses, nothing stopped, when the node is not as the swap left it; and
// it never rolls itself back.
func TestSwapUndo(t *testing.T) {
	t.Parallel()
	const newKubelet = "MZ kubelet that the cluster never saw"
	tests := []struct {
		name string
		// before changes the node or the request before the undo.
		before    func(t *testing.T, ts *simnode.TestServer, req *ops.SwapUndoRequest)
		result    string // the item's result; "" when the op refuses
		errSubstr string
		// running is the binary at the destination afterwards: the old
		// one, else the new one.
		oldBack bool
		// noBackup: the test removed the backup.
		noBackup bool
	}{
		{name: "undone", result: ops.SwapResultRolledBack, oldBack: true},
		{name: "another run replaced the binary", errSubstr: "no longer holds the binary to roll back",
			before: func(_ *testing.T, _ *simnode.TestServer, req *ops.SwapUndoRequest) {
				req.Items[0].SHA256 = provSum([]byte("MZ another run's kubelet"))
			}},
		{name: "no backup", errSubstr: "there is no old binary to put back", noBackup: true,
			before: func(t *testing.T, ts *simnode.TestServer, req *ops.SwapUndoRequest) {
				if err := ts.Node().Remove(req.Items[0].Backup); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "backup is another binary", errSubstr: "is not the binary the swap replaced",
			before: func(_ *testing.T, _ *simnode.TestServer, req *ops.SwapUndoRequest) {
				req.Items[0].BackupSHA256 = provSum([]byte("MZ older"))
			}},
		{name: "locked by another run", errSubstr: "the node is locked by swdt kubernetes run other",
			before: func(t *testing.T, ts *simnode.TestServer, _ *ops.SwapUndoRequest) {
				lockTake(t, ts, "other", time.Minute)
			}},
		{name: "old binary fails its check: no rollback of the undo", result: ops.SwapResultFailed,
			errSubstr: "health check failed: nothing listens on TCP port 12345", oldBack: true,
			before: func(_ *testing.T, _ *simnode.TestServer, req *ops.SwapUndoRequest) {
				req.Items[0].HealthChecks = []ops.HealthCheckSpec{{TCPPort: 12345}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n, w := ts.Node(), ts.Node().OS()
			req, old := undoSetup(t, ts, newKubelet)
			if tt.before != nil {
				tt.before(t, ts, &req)
			}
			pid := func() int { svc, _ := n.Service("kubelet"); return svc.PID }
			before := pid()
			resp, err := agent.Call(context.Background(), w, ops.SwapUndo, req)
			switch {
			case tt.result == "":
				if err == nil || !strings.Contains(err.Error(), tt.errSubstr) || !strings.Contains(err.Error(), "nothing was rolled back") {
					t.Fatalf("undo = %+v, %v; want a refusal saying %q", resp, err, tt.errSubstr)
				}
				if pid() != before {
					t.Error("a refused undo restarted kubelet")
				}
			case err != nil || len(resp.Items) != 1 || resp.Items[0].Result != tt.result || !strings.Contains(resp.Items[0].Error, tt.errSubstr):
				t.Fatalf("undo = %+v, %v; want %s with %q", resp, err, tt.result, tt.errSubstr)
			}
			want, kept := []byte(newKubelet), ".swdt-bak"
			if tt.oldBack {
				want, kept = old, ".swdt-failed"
				if got, _ := n.ReadFile(swapKubelet + ".swdt-failed"); string(got) != newKubelet {
					t.Errorf(".swdt-failed holds %q, want the undone binary", got)
				}
				if n.Exists(swapKubelet + ".swdt-bak") {
					t.Error("the backup is still there after it was put back")
				}
			}
			if got, _ := n.ReadFile(swapKubelet); !bytes.Equal(got, want) {
				t.Errorf("kubelet.exe holds %q, want %q", got, want)
			}
			if !n.Exists(swapKubelet+kept) && !tt.noBackup {
				t.Errorf("no %s after the undo", kept)
			}
			if tt.result == ops.SwapResultRolledBack {
				f := resp.Items[0].File
				if f == nil || f.SHA256 != provSum(old) || f.Size != int64(len(old)) {
					t.Errorf("file = %+v, want the old binary's", f)
				}
				swapAllRunning(t, n)
			}
			if n.Exists(ops.JournalPath) {
				t.Error("the undo left a journal")
			}
			if tt.name != "locked by another run" {
				if holder, _ := lockVia(t, ts, ops.NodeLockRequest{Owner: lockOwner("next"), StaleAfterMs: 1000}); !holder.Acquired {
					t.Errorf("the undo did not release the lock: %+v", holder)
				}
			}
		})
	}
}

// An undo cut short leaves a journal whose repair keeps the backup, and
// names the binaries as the user knows them: the kubelet the swap put in
// is the new one, the backup the old one.
func TestSwapUndoRecoverAfterKill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		hold       simnode.AgentHold
		wantBinary string
	}{
		{name: "after the stop", hold: simnode.AgentHold{Call: "StopService", Target: "kubelet"}, wantBinary: ops.RecoveredNew},
		{name: "between the two renames", hold: simnode.AgentHold{Call: "Rename", Target: `C:\k\kubelet.exe`}, wantBinary: ops.RecoveredNew},
		{name: "after the renames", hold: simnode.AgentHold{Call: "Rename", Target: ".swdt-bak"}, wantBinary: ops.RecoveredOld},
		{name: "during the start", hold: simnode.AgentHold{Call: "StartService", Target: "kubelet"}, wantBinary: ops.RecoveredOld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const newKubelet = "MZ kubelet v2"
			ts := simnode.StartTest(t)
			n, w := ts.Node(), ts.Node().OS()
			req, old := undoSetup(t, ts, newKubelet)
			hold := tt.hold
			hold.Op, hold.Cut, hold.Dies = ops.SwapUndo.Name, true, true
			if err := ts.SetFaults(simnode.Faults{HoldAgent: &hold}); err != nil {
				t.Fatal(err)
			}
			if err := sshOp(t, ts, ops.SwapUndo.Name, req); err == nil {
				t.Fatal("the undo answered although its agent was killed")
			}
			if n.HoldsReached() != 1 || !n.Exists(ops.JournalPath) {
				t.Fatalf("the agent was not killed at the step (holds %d) or left no journal", n.HoldsReached())
			}
			resp, err := agent.Call(context.Background(), w, ops.SwapRecover, ops.SwapRecoverRequest{RunID: "u", Trusted: []ops.TrustedBinary{{Service: "kubelet", Destination: swapKubelet}}})
			if err != nil || !resp.Found || len(resp.Items) != 1 {
				t.Fatalf("repair = %+v, %v", resp, err)
			}
			want := old
			if tt.wantBinary == ops.RecoveredNew {
				want = []byte(newKubelet)
				if !n.Exists(swapKubelet + ".swdt-bak") {
					t.Error("the repair of an undo removed the old binary it was putting back")
				}
			}
			if got := resp.Items[0]; got.Binary != tt.wantBinary || got.SHA256 != provSum(want) {
				t.Errorf("item = %+v; want the %s binary", got, tt.wantBinary)
			}
			if got, _ := n.ReadFile(swapKubelet); !bytes.Equal(got, want) {
				t.Errorf("kubelet.exe holds %q, want %q", got, want)
			}
			swapAllRunning(t, n)
		})
	}
}

// sshOp runs op over SSH with the agent at its path on the node, as swdt
// does, so that simnode's faults apply (see sshSwap).
func sshOp(t *testing.T, ts *simnode.TestServer, op string, req any) error {
	t.Helper()
	path := ts.InstallAgent()
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = ts.Execer().Exec(ctx, ops.CommandLine(path, op), bytes.NewReader(raw), &out, &errOut)
	if err == nil {
		if _, perr := ops.ParseEnvelope(out.Bytes()); perr != nil {
			return perr
		}
	}
	return err
}
