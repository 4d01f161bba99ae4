package agent_test

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// On Server 2019 a deleted file that another program holds open sharing
// delete access keeps its name until the handle closes. A name the agent
// removes to create again (the previous swap's backup, the swap lock) is
// free at once all the same: the file is moved aside first.
func TestNamesFreeAfterDeleteOnServer2019(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		held string
		// first makes held; again removes it and creates it again.
		first, again func(t *testing.T, ts *simnode.TestServer)
	}{
		{
			name: "the backup of the previous swap", held: swapKubelet + ".swdt-bak",
			first: func(t *testing.T, ts *simnode.TestServer) { swapKubeletTo(t, ts, "MZ first") },
			again: func(t *testing.T, ts *simnode.TestServer) { swapKubeletTo(t, ts, "MZ second") },
		},
		{
			name: "the swap lock", held: ops.LockPath,
			first: func(t *testing.T, ts *simnode.TestServer) { lockTake(t, ts, "a", time.Minute) },
			again: func(t *testing.T, ts *simnode.TestServer) {
				if resp, err := provCall(t, ts, ops.NodeUnlock, ops.NodeUnlockRequest{RunID: "a"}); err != nil || !resp.Released {
					t.Fatalf("unlock: %+v, %v", resp, err)
				}
				lockTake(t, ts, "b", time.Minute)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Release = simnode.Server2019 }))
			tt.first(t, ts)
			if err := ts.SetFaults(simnode.Faults{SharedOpen: []string{tt.held}}); err != nil {
				t.Fatal(err)
			}
			tt.again(t, ts)
			entries, err := ts.Node().List(tt.held[:strings.LastIndex(tt.held, `\`)])
			if err != nil {
				t.Fatal(err)
			}
			var lingering int
			for _, e := range entries {
				if ops.IsLeftover(e.Path, tt.held) {
					lingering++
				}
			}
			if lingering != 1 {
				t.Errorf("%d names moved aside beside %s, want the one the open handle keeps", lingering, tt.held)
			}
			if err := ts.SetFaults(simnode.Faults{}); err != nil {
				t.Fatal(err)
			}
			if entries, _ = ts.Node().List(tt.held[:strings.LastIndex(tt.held, `\`)]); len(entries) == 0 {
				t.Fatal("folder empty")
			}
			for _, e := range entries {
				if ops.IsLeftover(e.Path, tt.held) && strings.Contains(e.Path, ".swdt-del-") {
					t.Errorf("%s left after the handle closed", e.Path)
				}
			}
		})
	}
}

// swapKubeletTo swaps content into kubelet.exe.
func swapKubeletTo(t *testing.T, ts *simnode.TestServer, content string) {
	t.Helper()
	it := swapStage(t, ts.Node(), "kubelet", swapKubelet, []byte(content))
	resp, err := provCall(t, ts, ops.ServiceSwap, swapKubeletRequest(it))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Items[0]; got.Result == ops.SwapResultFailed {
		t.Fatalf("swap of %q failed: %s", content, got.Error)
	}
	if b, _ := ts.Node().ReadFile(swapKubelet); string(b) != content {
		t.Fatalf("kubelet.exe holds %q, want %q", b, content)
	}
}
