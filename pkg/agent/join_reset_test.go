package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// refusingKillOS plays a process the agent may not end (a protected or
// another session's process): TerminateProcess is refused for pid.
type refusingKillOS struct {
	winos.OS
	pid int
}

func (o refusingKillOS) KillProcess(pid int, started time.Time) error {
	if pid == o.pid {
		return &winos.Error{Op: "terminate process", Target: "process", Code: winos.ErrAccessDenied, Message: "Access is denied."}
	}
	return o.OS.KillProcess(pid, started)
}

// With pods on the node, containerd's shims run on after containerd
// stops and keep their image locked (Windows refuses to delete a running
// executable): join-reset ends the processes that run a file it removes
// before it removes them, leaves other processes alone, and reports a
// file it cannot free (name, PID) instead of failing halfway.
func TestJoinResetEndsPodSandboxShims(t *testing.T) {
	t.Parallel()
	const (
		containerd = `C:\Program Files\containerd\containerd.exe`
		shimName   = "containerd-shim-runhcs-v1.exe"
		shim       = `C:\Program Files\containerd\` + shimName
		kubelet    = `C:\k\kubelet.exe`
	)
	services := []ops.JoinService{{Name: "kube-proxy", Binary: `C:\k\kube-proxy.exe`}, {Name: "kubelet", Binary: kubelet}, {Name: "containerd", Binary: containerd}}
	tests := []struct {
		name string
		// removeShim puts the shim in the request's files (a
		// provisioner installed it).
		removeShim bool
		// refuse makes ending the first sandbox's shim fail.
		refuse    bool
		wantEnded int
		wantInUse bool
	}{
		{name: "two pods: their shims are ended, then removed", removeShim: true, wantEnded: 2},
		{name: "a shim that cannot be ended is reported, the rest removed", removeShim: true, refuse: true, wantEnded: 1, wantInUse: true},
		{name: "the node's own shim is not the join's: left running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n := simnode.StartTest(t).Node()
			if err := n.WriteFile(shim, []byte("MZ shim")); err != nil {
				t.Fatal(err)
			}
			var pids []int
			for _, id := range []string{"pod-a", "pod-b"} {
				pid, err := n.StartPodSandbox(id)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, pid)
			}
			w := n.OS()
			if tt.refuse {
				w = refusingKillOS{OS: w, pid: pids[0]}
			}
			req := ops.JoinResetRequest{Services: services}
			if tt.removeShim {
				req.Files = []string{shim}
			}
			resp, err := agent.Call(context.Background(), w, ops.JoinReset, req)
			if err != nil {
				t.Fatalf("join-reset failed halfway: %v", err)
			}
			if len(resp.Ended) != tt.wantEnded {
				t.Errorf("ended %+v; want %d shims", resp.Ended, tt.wantEnded)
			}
			for _, p := range resp.Ended {
				if !strings.EqualFold(p.Path, shim) || p.Name != shimName || !slices.Contains(pids, p.PID) {
					t.Errorf("ended %+v; want a sandbox's shim", p)
				}
			}
			for _, f := range []string{containerd, kubelet} {
				if n.Exists(f) || !slices.Contains(resp.Removed, f) {
					t.Errorf("%s not removed: %+v", f, resp)
				}
			}
			_, locked := n.LockedBy(shim)
			switch {
			case tt.wantInUse:
				if len(resp.InUse) != 1 || !strings.EqualFold(resp.InUse[0].Path, shim) || resp.InUse[0].PID != pids[0] ||
					resp.InUse[0].Name != shimName || !strings.Contains(resp.InUse[0].Error, "Access is denied") {
					t.Errorf("in use %+v; want the shim held by process %d, with why it was not ended", resp.InUse, pids[0])
				}
				if !n.Exists(shim) || slices.Contains(resp.Removed, shim) {
					t.Errorf("the shim in use is reported removed: %+v", resp)
				}
			case tt.removeShim:
				if n.Exists(shim) || locked || len(resp.InUse) != 0 {
					t.Errorf("the shim is still there (locked %v): %+v", locked, resp)
				}
			default:
				if !locked || len(resp.InUse) != 0 || len(resp.Ended) != 0 {
					t.Errorf("the node's own shim was touched (running %v): %+v", locked, resp)
				}
			}
		})
	}
}
