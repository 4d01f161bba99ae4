package kubeconn_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/kubeconn"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/remote"
	"sigs.k8s.io/swdt/pkg/simnode"
)

var (
	_ node.Conn      = (*kubeconn.Conn)(nil)
	_ node.Terminal  = (*kubeconn.Conn)(nil)
	_ node.Forwarder = (*kubeconn.Conn)(nil)
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestOpsThroughPodsExec: a node reached by its Node name only, through
// the real API server's pods/exec proxied to its (simulated) kubelet:
// the agent is delivered over the exec stream and verified, ops run,
// files go both ways, a stream cut mid-op is told from a success, and no
// SSH connection is ever opened.
func TestOpsThroughPodsExec(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	c := clustertest.Start(t)
	ts := c.StartKubeletNode(t, "win-01")
	ctx := testContext(t)
	// A Node the cluster does not have, and one whose kubelet never runs
	// the pod: each said, with where to look.
	if _, err := kubeconn.Dial(ctx, kubeconn.Options{Kubeconfig: c.Kubeconfig, Node: "win-99"}); err == nil || !strings.Contains(err.Error(), "the cluster has no Node win-99") {
		t.Errorf("Dial to a Node the cluster lacks: %v", err)
	}
	ghost := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "win-ghost", Labels: map[string]string{corev1.LabelOSStable: "windows"}}}
	if _, err := c.Client.CoreV1().Nodes().Create(ctx, ghost, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := kubeconn.Dial(ctx, kubeconn.Options{Kubeconfig: c.Kubeconfig, Node: "win-ghost", PodTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "swdt-agent-win-ghost on node win-ghost is Pending, not Running") ||
		!strings.Contains(err.Error(), "kubectl describe pod -n swdt-system swdt-agent-win-ghost") {
		t.Errorf("Dial to a Node whose kubelet never runs the pod: %v", err)
	}

	conn, err := kubeconn.Dial(ctx, kubeconn.Options{Kubeconfig: c.Kubeconfig, Node: "win-01"})
	if err != nil {
		t.Fatal(err)
	}
	n := node.New("win-01", conn, nil)
	facts, err := n.Facts(ctx)
	if err != nil {
		t.Fatalf("Facts through pods/exec: %v", err)
	}
	if facts.Hostname != "WIN-01" || !facts.IsAdmin {
		t.Errorf("facts = %+v, want the node's hostname WIN-01 and an administrator (SYSTEM)", facts)
	}
	if got, want := n.Capabilities(), (node.Capabilities{Encoding: true, Attachments: true, PortForward: true, Terminal: true}); got != want {
		t.Errorf("Capabilities = %+v, want %+v", got, want)
	}
	// A terminal is cmd.exe in the pod, through an exec with a TTY.
	var term bytes.Buffer
	if status, err := n.Shell(ctx, remote.ShellOptions{Command: "hostname", Size: remote.WindowSize{Width: 120, Height: 40}, Stdout: &term}); err != nil || status != 0 || term.String() != "WIN-01\r\n" {
		t.Errorf("Shell with a command: status %d, %v, output %q; want 0 and WIN-01", status, err, term.String())
	}
	// cmd.exe's 9009 is more than the exec protocol carries: taken from
	// client-go's error, which names it.
	if status, err := n.Shell(ctx, remote.ShellOptions{Command: "nosuch"}); err != nil || status != 9009 {
		t.Errorf("Shell with a command that is not there: status %d, %v; want 9009", status, err)
	}
	payload := []byte(strings.Repeat("kubelet build\x00\xff", 70000))
	if err := n.Upload(ctx, strings.NewReader(string(payload)), int64(len(payload)), `C:\k\new\kubelet.exe`, nil); err != nil {
		t.Fatalf("Upload: %v", err)
	}
	if got, err := ts.Node().ReadFile(`C:\k\new\kubelet.exe`); err != nil || string(got) != string(payload) {
		t.Fatalf("the node's file after Upload: %d bytes, %v; want the %d sent", len(got), err, len(payload))
	}
	var back strings.Builder
	if err := n.Download(ctx, `C:\k\new\kubelet.exe`, &back); err != nil || back.String() != string(payload) {
		t.Fatalf("Download: %d bytes, %v", back.Len(), err)
	}
	if _, err := n.Stat(ctx, `C:\k\missing.exe`); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat of a missing file: %v, want fs.ErrNotExist", err)
	}

	// The kubelet's side of the stream is cut while the op runs: pods/exec
	// then ends with no status, as a success does, and only the missing
	// result line tells; the agent runs on to the end of its op.
	hold := simnode.AgentHold{Op: ops.FilesRemove.Name, Call: "Remove", Cut: true}
	if err := ts.SetFaults(simnode.Faults{HoldAgent: &hold}); err != nil {
		t.Fatal(err)
	}
	_, err = n.RemoveFiles(ctx, []string{`C:\k\new\kubelet.exe`})
	if !errors.Is(err, kubeconn.ErrStreamLost) || ts.Node().HoldsReached() != 1 {
		t.Fatalf("RemoveFiles with its stream cut: %v (holds reached %d), want kubeconn.ErrStreamLost", err, ts.Node().HoldsReached())
	}
	if _, err := n.Stat(ctx, `C:\k\new\kubelet.exe`); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat after the cut op: %v, want the file removed by the agent that ran on", err)
	}
	if got := ts.Connections(); got != 0 {
		t.Errorf("simnode saw %d SSH connections, want none", got)
	}
}
