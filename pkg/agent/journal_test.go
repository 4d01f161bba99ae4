package agent_test

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// sshSwap runs service-swap as swdt does, over SSH with the agent at its
// path on the node, so that simnode's faults apply: an AgentHold with Cut
// kills the agent at that step, as a killed swdt or a lost node does.
func sshSwap(t *testing.T, ts *simnode.TestServer, req ops.ServiceSwapRequest) error {
	t.Helper()
	return sshOp(t, ts, ops.ServiceSwap.Name, req)
}

// An agent killed at any step of a swap leaves a journal from which
// swap-recover leaves every service Running with the old or the new
// binary, says which, and puts back the failure actions the swap switched
// off.
func TestSwapRecoverAfterKill(t *testing.T) {
	t.Parallel()
	const newKubelet = "MZ kubelet v2"
	tests := []struct {
		name string
		hold simnode.AgentHold
		// content is the new binary; wantBinary what the repair keeps.
		content    string
		wantBinary string
		wantError  string
	}{
		{name: "after a stop", hold: simnode.AgentHold{Call: "StopService", Target: "kubelet"},
			content: newKubelet, wantBinary: ops.RecoveredOld},
		{name: "between the two renames", hold: simnode.AgentHold{Call: "Rename", Target: `C:\k\kubelet.exe`},
			content: newKubelet, wantBinary: ops.RecoveredOld},
		{name: "after the rename", hold: simnode.AgentHold{Call: "Rename", Target: ".swdt-new"},
			content: newKubelet, wantBinary: ops.RecoveredNew},
		{name: "during the start", hold: simnode.AgentHold{Call: "StartService", Target: "kubelet"},
			content: newKubelet, wantBinary: ops.RecoveredNew},
		{name: "during the start of a new binary that crashes", hold: simnode.AgentHold{Call: "StartService", Target: "kubelet"},
			content: "MZ " + simnode.MarkerCrashOnStart, wantBinary: ops.RecoveredOld, wantError: "stopped"},
		{name: "half-way through a rollback", hold: simnode.AgentHold{Call: "Rename", Target: `C:\k\kubelet.exe`, Count: 3},
			content: "MZ " + simnode.MarkerCrashOnStart, wantBinary: ops.RecoveredOld, wantError: "the swap was rolling it back"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n, w := ts.Node(), ts.Node().OS()
			rec := winos.Recovery{Actions: []winos.RecoveryAction{{Type: winos.RecoveryRestart, Delay: 5 * time.Second}}, ResetPeriod: time.Hour}
			if err := w.SetRecovery("kubelet", rec); err != nil {
				t.Fatal(err)
			}
			old, err := n.ReadFile(swapKubelet)
			if err != nil {
				t.Fatal(err)
			}
			it := swapStage(t, n, "kubelet", swapKubelet, []byte(tt.content))
			it.OldSHA256 = provSum(old)
			req := swapKubeletRequest(it)
			req.Owner = lockOwner("a")
			lockTake(t, ts, "a", time.Minute)
			hold := tt.hold
			hold.Op, hold.Cut, hold.Dies = ops.ServiceSwap.Name, true, true
			if err := ts.SetFaults(simnode.Faults{HoldAgent: &hold}); err != nil {
				t.Fatal(err)
			}
			if err := sshSwap(t, ts, req); err == nil {
				t.Fatal("the swap answered although its agent was killed")
			}
			if n.HoldsReached() != 1 {
				t.Fatal("the agent was not killed at the step")
			}
			if !n.Exists(ops.JournalPath) {
				t.Fatal("the killed swap left no journal")
			}

			resp, err := agent.Call(context.Background(), w, ops.SwapRecover, ops.SwapRecoverRequest{RunID: "a",
				Trusted: []ops.TrustedBinary{{Service: "kubelet", Destination: swapKubelet}}})
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Found || len(resp.Items) != 1 {
				t.Fatalf("resp = %+v", resp)
			}
			got := resp.Items[0]
			want := old
			if tt.wantBinary == ops.RecoveredNew {
				want = []byte(tt.content)
			}
			if got.Binary != tt.wantBinary || got.SHA256 != provSum(want) || !strings.Contains(got.Error, tt.wantError) {
				t.Errorf("item = %+v; want %s binary %s, error containing %q", got, tt.wantBinary, provSum(want), tt.wantError)
			}
			if b, _ := n.ReadFile(swapKubelet); !bytes.Equal(b, want) {
				t.Errorf("kubelet.exe holds %q, want %q", b, want)
			}
			swapAllRunning(t, n)
			if r, err := w.Recovery("kubelet"); err != nil || !reflect.DeepEqual(r, rec) {
				t.Errorf("failure actions = %+v, %v; want %+v", r, err, rec)
			}
			for _, p := range []string{ops.JournalPath, it.Staged} {
				if n.Exists(p) {
					t.Errorf("%s left behind", p)
				}
			}
			// Nothing left to repair; a later swap is not refused.
			if again, err := agent.Call(context.Background(), w, ops.SwapRecover, ops.SwapRecoverRequest{RunID: "a"}); err != nil || again.Found {
				t.Errorf("second repair: %+v, %v", again, err)
			}
		})
	}
}

// A swap refuses to start, nothing stopped, while an earlier one is
// unfinished: it must be repaired first.
func TestServiceSwapRefusedWhileUnfinished(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	hold := simnode.AgentHold{Op: ops.ServiceSwap.Name, Call: "StopService", Target: "kube-proxy", Cut: true, Dies: true}
	if err := ts.SetFaults(simnode.Faults{HoldAgent: &hold}); err != nil {
		t.Fatal(err)
	}
	if err := sshSwap(t, ts, swapKubeletRequest(swapStage(t, n, "kubelet", swapKubelet, []byte("MZ new")))); err == nil {
		t.Fatal("the swap answered although its agent was killed")
	}
	_, err := agent.Call(context.Background(), n.OS(), ops.ServiceSwap, swapKubeletRequest(swapStage(t, n, "kubelet", swapKubelet, []byte("MZ newer"))))
	if kind, msg := provFailure(t, err); kind != ops.KindUnfinished || !strings.Contains(msg, "nothing was stopped") {
		t.Errorf("failure %s %q", kind, msg)
	}
	resp, err := agent.Call(context.Background(), n.OS(), ops.ProvisionInspect, ops.ProvisionInspectRequest{})
	if err != nil || resp.Unfinished == nil || resp.Unfinished.InProgress || !slicesEqual(resp.Unfinished.Journal.Stopped, []string{"kube-proxy"}) {
		t.Errorf("inspect: %+v, %v", resp.Unfinished, err)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }
