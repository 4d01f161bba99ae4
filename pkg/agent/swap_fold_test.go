package agent_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// A swap that carries its lock request takes the node's lock first, in
// the same op, swaps and releases it; while another live run holds the
// lock it does nothing and reports the holder; a lock request for another
// run than the swap's is refused.
func TestServiceSwapTakesTheLock(t *testing.T) {
	t.Parallel()
	const runID = "b"
	staged := swapKubelet + ".swdt-new-" + runID
	tests := []struct {
		name string
		// held is the run holding the lock first ("" for none).
		held      string
		lockRunID string
		wantSwap  bool
		wantErr   string
	}{
		{name: "a free lock is taken, the swap done and the lock released", lockRunID: runID, wantSwap: true},
		{name: "its own lock is taken again", held: runID, lockRunID: runID, wantSwap: true},
		{name: "another run's live lock: nothing done", held: "a", lockRunID: runID},
		{name: "a lock request for another run is refused", lockRunID: "c", wantErr: "bad-request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			if tt.held != "" {
				lockTake(t, ts, tt.held, time.Minute)
			}
			_, nw, it := rebuiltKubeletPatch(t, n, staged)
			before, _ := n.Service("kubelet")
			req := swapKubeletRequest(it)
			req.Owner, req.Unlock = lockOwner(runID), true
			req.Lock = &ops.NodeLockRequest{Owner: lockOwner(tt.lockRunID), StaleAfterMs: 60000, Staged: []string{staged, it.Encoded}}
			resp, err := agent.Call(context.Background(), n.OS(), ops.ServiceSwap, req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			got, _ := n.ReadFile(swapKubelet)
			after, _ := n.Service("kubelet")
			if !tt.wantSwap {
				if bytes.Equal(got, nw) || after.PID != before.PID || n.Exists(staged) {
					t.Error("the swap changed something without the lock")
				}
				if tt.held != "" && (resp.Locked == nil || resp.Locked.Acquired || resp.Locked.Holder == nil || resp.Locked.Holder.Owner.RunID != tt.held) {
					t.Errorf("locked %+v, want the holder %s reported", resp.Locked, tt.held)
				}
				return
			}
			if resp.Locked == nil || !resp.Locked.Acquired {
				t.Fatalf("locked %+v, want acquired", resp.Locked)
			}
			if len(resp.Items) != 1 || resp.Items[0].Result != ops.SwapResultSwapped || !bytes.Equal(got, nw) {
				t.Fatalf("items %+v, the destination holds the new binary: %v", resp.Items, bytes.Equal(got, nw))
			}
			if !resp.Unlocked || n.Exists(ops.LockPath) {
				t.Errorf("unlocked %v, lock file there %v: want the lock released", resp.Unlocked, n.Exists(ops.LockPath))
			}
			swapAllRunning(t, n)
		})
	}
}

// TestFoldedSwapChecksServices: a swap that takes the lock itself, planned
// from an earlier inspect, first compares the services (all but PIDs) and
// the destinations (size and time) with the plan's and, when they differ,
// does nothing and says what changed: the run then inspects and plans
// again.
func TestFoldedSwapChecksServices(t *testing.T) {
	t.Parallel()
	const runID = "b"
	staged := swapKubelet + ".swdt-new-" + runID
	tests := []struct {
		name string
		// change changes the node after the inspect the run planned with.
		change      func(t *testing.T, n *simnode.Node)
		wantChanged string
	}{
		{name: "as planned: swapped", change: func(*testing.T, *simnode.Node) {}},
		{name: "the service was stopped since", wantChanged: "service kubelet is Stopped",
			change: func(t *testing.T, n *simnode.Node) { stopAndWait(t, n, "kube-proxy", "kubelet") }},
		{name: "a service that depends on it was registered since", wantChanged: "service kubelet-helper now depends on a service the run swaps",
			change: func(t *testing.T, n *simnode.Node) {
				if err := n.CreateService(simnode.ServiceConfig{Name: "kubelet-helper", BinaryPath: `C:\k\helper.exe`, Dependencies: []string{"kubelet"}}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "the binary was replaced since", wantChanged: swapKubelet + " was written since swdt last saw it",
			change: func(t *testing.T, n *simnode.Node) {
				old, err := n.ReadFile(swapKubelet)
				if err != nil {
					t.Fatal(err)
				}
				if err := n.Rename(swapKubelet, swapKubelet+".moved", false); err != nil {
					t.Fatal(err)
				}
				if err := n.WriteFile(swapKubelet, append(old, "another build"...)); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "the service was removed since", wantChanged: "service kube-proxy is not registered",
			change: func(t *testing.T, n *simnode.Node) {
				stopAndWait(t, n, "kube-proxy")
				if err := n.DeleteService("kube-proxy"); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			planned, err := agent.Call(context.Background(), n.OS(), ops.ProvisionInspect,
				ops.ProvisionInspectRequest{Targets: []ops.ProvisionTarget{{Service: "kubelet", Destination: swapKubelet}}})
			if err != nil {
				t.Fatal(err)
			}
			tt.change(t, n)
			_, nw, it := rebuiltKubeletPatch(t, n, staged)
			before := map[string]simnode.Service{}
			for _, name := range []string{"kubelet", "kube-proxy"} {
				before[name], _ = n.Service(name)
			}
			req := swapKubeletRequest(it)
			req.Owner, req.Unlock = lockOwner(runID), true
			req.Lock = &ops.NodeLockRequest{Owner: lockOwner(runID), StaleAfterMs: 60000, Staged: []string{staged, it.Encoded}}
			req.Expect, req.ExpectFiles = planned.Services, planned.Files
			resp, err := agent.Call(context.Background(), n.OS(), ops.ServiceSwap, req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := n.ReadFile(swapKubelet)
			if tt.wantChanged == "" {
				if len(resp.Changed) > 0 || !bytes.Equal(got, nw) {
					t.Fatalf("changed %q, swapped %v: want the swap done", resp.Changed, bytes.Equal(got, nw))
				}
				swapAllRunning(t, n)
				return
			}
			if !slices.ContainsFunc(resp.Changed, func(c string) bool { return strings.Contains(c, tt.wantChanged) }) {
				t.Errorf("changed %q, want %q", resp.Changed, tt.wantChanged)
			}
			if bytes.Equal(got, nw) || n.Exists(staged) || len(resp.Items) > 0 {
				t.Error("the swap changed something although the services changed")
			}
			for name, b := range before {
				if a, _ := n.Service(name); a.Status != b.Status || a.PID != b.PID {
					t.Errorf("%s went from %s (PID %d) to %s (PID %d)", name, b.Status, b.PID, a.Status, a.PID)
				}
			}
			if resp.Locked == nil || !resp.Locked.Acquired {
				t.Errorf("locked %+v: the run keeps the lock to inspect under it", resp.Locked)
			}
		})
	}
}

// stopAndWait stops each service, in order, until it is Stopped.
func stopAndWait(t *testing.T, n *simnode.Node, names ...string) {
	t.Helper()
	for _, name := range names {
		if err := n.StopService(name); err != nil {
			t.Fatal(err)
		}
		swapWait(t, n, name, simnode.StatusStopped)
	}
}
