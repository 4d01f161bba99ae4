package agent_test

import (
	"bytes"
	"context"
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
