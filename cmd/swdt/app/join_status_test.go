package app

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// swdt status says why a joined Node is NotReady: the simulated kubelet,
// like a real one without a network plugin, posts Ready False with the
// runtime's reason and its pressure conditions False; status shows the
// first (as text and in -o json) and not the healthy others.
func TestJoinStatusSaysWhyNotReady(t *testing.T) {
	fx := newJoinFixture(t)
	if code, _, errOut := fx.run("join"); code != exitcode.OK {
		t.Fatalf("join: exit %d\n%s", code, errOut)
	}
	var st report.Status
	if code, errOut := fx.runDoc(&st, "status"); code != exitcode.OK || len(st.Nodes) != 1 {
		t.Fatalf("status: exit %d\n%s", code, errOut)
	}
	var node *cluster.NodeState
	for _, b := range st.Nodes[0].Binaries {
		if b.Name == "kubelet" {
			node = b.Node
		}
	}
	if node == nil || node.Ready != corev1.ConditionFalse || len(node.Conditions) != 1 {
		t.Fatalf("status -o json: the kubelet's Node %+v; want NotReady with one condition that is not healthy", node)
	}
	if c := node.Conditions[0]; c.Type != corev1.NodeReady || c.Status != corev1.ConditionFalse || c.Reason != "KubeletNotReady" || !strings.Contains(c.Message, "NetworkPluginNotReady") {
		t.Errorf("status -o json: condition %+v; want Ready False, KubeletNotReady, the runtime's NetworkPluginNotReady", c)
	}

	var out, errb bytes.Buffer
	code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
		[]string{"status", "--no-color", "-c", fx.config, "--cache-dir", filepath.Join(fx.dir, "cache")})
	want := "Node win-join01 is NotReady: Ready False (KubeletNotReady: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady"
	if code != exitcode.OK || !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), "What makes Ready") || strings.Contains(errb.String(), "Pressure") {
		t.Errorf("status: exit %d; want a warning %q... naming no healthy condition\nstdout:\n%s\nstderr:\n%s", code, want, out.String(), errb.String())
	}
}
