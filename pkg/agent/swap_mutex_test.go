package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// A run whose swdt is gone may not have its lock broken while a swap
// agent still works on the node (it outlives its connection): the lock is
// reported held until the agent lets go of the swap mutex.
func TestNodeLockNotBrokenWhileSwapAgentWorks(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// An SSH signal request is what ends an agent on Windows (OpenSSH ends
// the session's job): swdt sends one when it gives up on an op. The swap
// then stops where it was, and leaves its journal to the repair.
func TestSignalEndsTheAgent(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	hold := simnode.AgentHold{Op: ops.ServiceSwap.Name, Call: "StopService", Target: "kubelet"}
	if err := ts.SetFaults(simnode.Faults{HoldAgent: &hold}); err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(swapKubeletRequest(swapStage(t, n, "kubelet", swapKubelet, []byte("MZ kubelet v2"))))
	if err != nil {
		t.Fatal(err)
	}
	path := ts.InstallAgent()
	c, err := ts.Dial(ts.User())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	sess.Stdin = bytes.NewReader(raw)
	if err := sess.Start(ops.CommandLine(path, ops.ServiceSwap.Name)); err != nil {
		t.Fatal(err)
	}
	for n.HoldsReached() == 0 {
		if err := n.Sleep(context.Background(), 5*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	// swdt gives up on the op (remote.Client.Exec): a signal, then the
	// session closes.
	if err := sess.Signal(ssh.SIGKILL); err != nil {
		t.Fatal(err)
	}
	sess.Close()
	if err := sess.Wait(); err == nil {
		t.Fatal("the swap answered although swdt gave up on it")
	}
	// The killed agent let go of the swap mutex; the repair takes it.
	resp, err := agent.Call(context.Background(), n.OS(), ops.SwapRecover, ops.SwapRecoverRequest{})
	if err != nil || !resp.Found || resp.Finished != nil {
		t.Fatalf("repair: %+v, %v; want the killed swap's journal repaired", resp, err)
	}
	if b, _ := n.ReadFile(swapKubelet); string(b) == "MZ kubelet v2" {
		t.Error("the killed agent went on and swapped kubelet")
	}
}

// Any local account may create the swap mutex first and hold it: the
// swap then says who holds it and what to do at once, instead of waiting
// for "another swdt-agent" for minutes.
func TestSwapRefusesAMutexAnotherAccountHolds(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
	n := ts.Node()
	mallory, err := ts.NodeAs("mallory")
	if err != nil {
		t.Fatal(err)
	}
	unlock, _, err := mallory.OS().LockMutex(context.Background(), ops.SwapMutex)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	it := swapStage(t, n, "kubelet", swapKubelet, []byte("MZ kubelet v2"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = agent.Call(ctx, n.OS(), ops.ServiceSwap, swapKubeletRequest(it))
	var f *agent.Failure
	if !errors.As(err, &f) || f.Kind != ops.KindAccessDenied || !strings.Contains(f.Message, "mallory") || !strings.Contains(f.Message, "reboot the node") {
		t.Fatalf("swap while mallory holds the mutex = %v; want access-denied naming mallory and the fix", err)
	}
	if ctx.Err() != nil {
		t.Error("the swap waited for mallory's mutex")
	}
}
