package agent_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// replaceRunning puts content in place of the binary of a running
// service, as an earlier install would have.
func replaceRunning(t *testing.T, n *simnode.Node, service, path, content string) {
	t.Helper()
	if err := n.StopService(service); err != nil {
		t.Fatal(err)
	}
	if _, err := n.WaitService(context.Background(), service, simnode.StatusStopped, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := n.WriteFile(path, []byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := n.StartService(service); err != nil {
		t.Fatal(err)
	}
	if _, err := n.WaitService(context.Background(), service, simnode.StatusRunning, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// A dependent whose process exits while it stops fails in the service
// control manager's eyes, and its failure action would restart it (and
// kubelet, its dependency, on the old binary) in the middle of the swap
// (issue 22, item 5). The swap switches off the failure actions of every
// service it stops, and puts them back, read back, at the end.
func TestSwapSuspendsDependentsFailureActions(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n, w := ts.Node(), ts.Node().OS()
	replaceRunning(t, n, "kube-proxy", `C:\k\kube-proxy.exe`, "MZ kube-proxy "+simnode.MarkerExitOnStop)
	rec := winos.Recovery{Actions: []winos.RecoveryAction{{Type: winos.RecoveryRestart}}, ResetPeriod: time.Hour}
	if err := w.SetRecovery("kube-proxy", rec); err != nil {
		t.Fatal(err)
	}
	before, _ := n.Service("kube-proxy")
	resp, err := agent.Call(context.Background(), w, ops.ServiceSwap, swapKubeletRequest(swapStage(t, n, "kubelet", swapKubelet, []byte("MZ kubelet v2"))))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 1 || resp.Items[0].Result != ops.SwapResultSwapped || len(resp.Killed) != 0 || len(resp.RecoveryNotRestored) != 0 {
		t.Errorf("resp = %+v; want kubelet swapped, nothing killed, every failure action restored", resp)
	}
	after, _ := n.Service("kube-proxy")
	if after.StartCount != before.StartCount+1 {
		t.Errorf("kube-proxy started %d times during the swap, want once (by the swap)", after.StartCount-before.StartCount)
	}
	if got, err := w.Recovery("kube-proxy"); err != nil || !reflect.DeepEqual(got, rec) {
		t.Errorf("kube-proxy's failure actions = %+v, %v; want %+v back", got, err, rec)
	}
	swapAllRunning(t, n)
}

// A dependent that shares its process with other services (svchost) is
// stopped and started, but its process, which runs on for the others, is
// neither waited for nor killed (issue 22, item 6).
func TestSwapLeavesSharedHostAlone(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n, w := ts.Node(), ts.Node().OS()
	if err := n.ConfigureService("hns", func(c *simnode.ServiceConfig) { c.Dependencies = append(c.Dependencies, "containerd") }); err != nil {
		t.Fatal(err)
	}
	other, _ := n.Service("iphlpsvc")
	if hns, _ := n.Service("hns"); hns.PID == 0 || hns.PID != other.PID {
		t.Fatalf("hns (%d) and iphlpsvc (%d) do not share a process", hns.PID, other.PID)
	}
	const containerd = `C:\Program Files\containerd\containerd.exe`
	req := swapRequest(swapStage(t, n, "containerd", containerd, []byte("MZ containerd v2")))
	resp, err := agent.Call(context.Background(), w, ops.ServiceSwap, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 1 || resp.Items[0].Result != ops.SwapResultSwapped || len(resp.Killed) != 0 {
		t.Errorf("resp = %+v; want containerd swapped and nothing killed", resp)
	}
	after, _ := n.Service("iphlpsvc")
	if after.Status != simnode.StatusRunning || after.PID != other.PID || after.StartCount != other.StartCount {
		t.Errorf("iphlpsvc = %s, PID %d, %d starts; want it untouched (Running, PID %d, %d starts)", after.Status, after.PID, after.StartCount, other.PID, other.StartCount)
	}
	if hns, _ := n.Service("hns"); hns.Status != simnode.StatusRunning || hns.PID != other.PID {
		t.Errorf("hns = %s, PID %d; want Running in the shared process %d again", hns.Status, hns.PID, other.PID)
	}
}

// containerd's shims are its children and keep containers running across
// its restarts: the swap of containerd neither waits for them nor kills
// them (only a wrapper's children are its service's).
func TestSwapLeavesContainerdShimsRunning(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	const shim = `C:\Program Files\containerd\containerd-shim-runhcs-v1.exe`
	if err := n.WriteFile(shim, []byte("MZ shim")); err != nil {
		t.Fatal(err)
	}
	cd, _ := n.Service("containerd")
	shimPID := 0
	if err := n.Update(func(s *simnode.State) error {
		shimPID = s.NextPID
		s.NextPID += 4
		s.Processes[shimPID] = &simnode.Process{PID: shimPID, Parent: cd.PID, Image: shim, CommandLine: `"` + shim + `" -namespace k8s.io`}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const containerd = `C:\Program Files\containerd\containerd.exe`
	resp, err := agent.Call(context.Background(), n.OS(), ops.ServiceSwap, swapRequest(swapStage(t, n, "containerd", containerd, []byte("MZ containerd v2"))))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 1 || resp.Items[0].Result != ops.SwapResultSwapped || len(resp.Killed) != 0 {
		t.Errorf("resp = %+v; want containerd swapped and nothing killed", resp)
	}
	if p, ok := n.LockedBy(shim); !ok || p.PID != shimPID {
		t.Errorf("the shim (process %d) no longer runs", shimPID)
	}
}
