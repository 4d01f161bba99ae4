package kubeconn_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/kubeconn"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/source"
)

// steps records a run's steps.
type steps struct {
	mu   sync.Mutex
	list []string
}

func (s *steps) Planned(*hotswap.Plan) {}
func (s *steps) Step(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, msg)
}
func (s *steps) Upload(hotswap.Item) func(int64) { return func(int64) {} }
func (s *steps) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.list, "\n")
}

// TestKubeletSwappedThroughItsOwnExecStream: the kubelet that carries
// the exec stream is the binary being swapped. The stream drops mid-swap
// (cut right after the kubelet stopped, and the stopped kubelet drops it
// too); the agent runs on to the end of its op on the node, the new
// kubelet comes back and serves exec again, and the repair reads the
// swap's own result through it, as over SSH.
func TestKubeletSwappedThroughItsOwnExecStream(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	c := clustertest.Start(t)
	hold := simnode.AgentHold{Op: ops.ServiceSwap.Name, Call: "Rename", Target: clustertest.KubeletPath, Cut: true}
	ts := c.StartKubeletNode(t, "win-01", simnode.WithFaults(simnode.Faults{HoldAgent: &hold}))
	ctx := testContext(t)
	conn, err := kubeconn.Dial(ctx, kubeconn.Options{Kubeconfig: c.Kubeconfig, Node: "win-01"})
	if err != nil {
		t.Fatal(err)
	}
	n := node.New("win-01", conn, nil)
	build := simnode.KubeletBinary("v1.37.3")
	p := filepath.Join(t.TempDir(), "kubelet.exe")
	if err := os.WriteFile(p, build, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(build)
	src := &source.File{Ref: p, Path: p, Size: int64(len(build)), SHA256: hex.EncodeToString(sum[:])}
	obs := &steps{}
	rep, err := hotswap.Run(ctx, n, []hotswap.Item{{Name: "kubelet", Service: "kubelet", Destination: clustertest.KubeletPath, Source: src}},
		hotswap.Options{Observer: obs})
	if err != nil {
		t.Fatalf("hotswap.Run: %v\n%s", err, obs)
	}
	if ts.Node().HoldsReached() != 1 {
		t.Fatalf("the exec stream was not cut mid-swap\n%s", obs)
	}
	if r := rep.Results[0]; r.Action != hotswap.ActionUpdated || r.Error != "" {
		t.Fatalf("result %+v, want updated\n%s", r, obs)
	}
	if !strings.Contains(obs.String(), "the swap ran to its end on the node after the connection dropped") {
		t.Errorf("the run did not read the swap's result after the stream came back:\n%s", obs)
	}
	c.WaitKubeletVersion(t, "win-01", "v1.37.3")
	if got, err := ts.Node().ReadFile(clustertest.KubeletPath); err != nil || string(got) != string(build) {
		t.Errorf("%s after the swap: %q, %v", clustertest.KubeletPath, got, err)
	}
}
