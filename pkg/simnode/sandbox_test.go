package simnode

import (
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/simnode/machine"
)

// A pod sandbox is a process of containerd's shim, started by containerd:
// it outlives containerd's stop and keeps its image locked until it ends
// (Windows refuses to delete a running executable).
func TestPodSandboxShimOutlivesContainerd(t *testing.T) {
	const shim = `C:\Program Files\containerd\` + machine.ShimBinary
	tests := []struct {
		name    string
		prepare func(t *testing.T, n *Node)
		wantErr string
	}{
		{name: "containerd runs, its shim is there", prepare: func(t *testing.T, n *Node) {
			if err := n.WriteFile(shim, []byte("MZ shim")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "no shim beside containerd", wantErr: "failed to start shim"},
		{name: "containerd stopped", prepare: func(t *testing.T, n *Node) {
			if err := n.WriteFile(shim, []byte("MZ shim")); err != nil {
				t.Fatal(err)
			}
			stopAll(t, n)
		}, wantErr: "containerd does not run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := StartTest(t).Node()
			if tt.prepare != nil {
				tt.prepare(t, n)
			}
			ctrd, _ := n.Service("containerd")
			pid, err := n.StartPodSandbox("0a1b2c")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("StartPodSandbox: %v; want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := n.LockedBy(shim); !ok || p.PID != pid || p.Parent != ctrd.PID {
				t.Fatalf("the shim is locked by %+v (%v); want the sandbox's process %d, child of containerd's %d", p, ok, pid, ctrd.PID)
			}
			stopAll(t, n)
			if err := n.Remove(shim); !errors.Is(err, ErrSharingViolation) {
				t.Errorf("remove the shim of a running sandbox after containerd stopped: %v; want a sharing violation", err)
			}
			if err := n.KillProcess(pid); err != nil {
				t.Fatal(err)
			}
			if err := n.Remove(shim); err != nil {
				t.Errorf("remove the shim once its process ended: %v", err)
			}
		})
	}
}
