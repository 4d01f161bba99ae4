package agent_test

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// A run whose swdt is gone may not have its lock broken while a swap
// agent still works on the node (it outlives its connection): the lock is
// reported held until the agent lets go of the swap mutex.
func TestNodeLockNotBrokenWhileSwapAgentWorks(t *testing.T) {
	ts := simnode.StartTest(t)
	lockTake(t, ts, "a", time.Minute)
	unlock, _, err := ts.Node().OS().LockMutex(context.Background(), ops.SwapMutex)
	if err != nil {
		t.Fatal(err)
	}
	req := ops.NodeLockRequest{Owner: lockOwner("b"), StaleAfterMs: time.Minute.Milliseconds(), Break: "a"}
	resp, err := lockVia(t, ts, req)
	if err != nil || resp.Acquired || resp.Broken != nil || resp.Holder == nil || resp.Holder.Owner.RunID != "a" {
		t.Fatalf("while the agent works: %+v, %v; want run a reported as the holder", resp, err)
	}
	unlock()
	resp, err = lockVia(t, ts, req)
	if err != nil || !resp.Acquired || resp.Broken == nil {
		t.Fatalf("once it is done: %+v, %v; want the dead run's lock broken", resp, err)
	}
}

// A repair that finds no journal reports the result its own run's swap
// left (the swap finished after its connection dropped), once; another
// run's result is not its.
func TestSwapRecoverReportsFinishedSwap(t *testing.T) {
	ts := simnode.StartTest(t)
	n := ts.Node()
	it := swapStage(t, n, "kubelet", swapKubelet, []byte("MZ kubelet v2"))
	req := swapKubeletRequest(it)
	req.Owner, req.Unlock = lockOwner("a"), true
	lockTake(t, ts, "a", time.Minute)
	swapped, err := agent.Call(context.Background(), n.OS(), ops.ServiceSwap, req)
	if err != nil {
		t.Fatal(err)
	}
	// b holds no lock and has no result: refused. a's result is
	// reported once; then a, whose lock the swap released, is refused.
	for i, tt := range []struct {
		run    string
		result bool
	}{{"b", false}, {"a", true}, {"a", false}} {
		resp, err := agent.Call(context.Background(), n.OS(), ops.SwapRecover, ops.SwapRecoverRequest{RunID: tt.run})
		if (err == nil) != tt.result || (resp.Finished != nil) != tt.result || resp.Found {
			t.Fatalf("repair %d by run %s: %+v, %v; want a result: %v", i, tt.run, resp, err, tt.result)
		}
		if tt.result && (resp.Finished.Response == nil || len(resp.Finished.Response.Items) != len(swapped.Items) || resp.Finished.Response.Items[0].Result != swapped.Items[0].Result) {
			t.Errorf("result = %+v, want the swap's %+v", resp.Finished.Response, swapped)
		}
	}
}
