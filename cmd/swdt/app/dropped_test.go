package app

import (
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// The connection drops in the middle of the swap (issue 22, item 3). As
// under OpenSSH for Windows, the agent runs on to the end of its op; swdt
// repairs at once, and its repair's agent starts while the swap's still
// works (the fault resumes the swap only then). One agent works on the
// swap at a time: the repair waits for the swap's mutex, finds the swap
// finished and reports the swap's own result.
func TestKubernetesConnectionDropsMidSwap(t *testing.T) {
	t.Parallel()
	hold := simnode.AgentHold{Op: ops.ServiceSwap.Name, Call: "StopService", Target: "kubelet", Cut: true, ResumeWhen: ops.SwapRecover.Name}
	fx := newKubeFixture(t, simnode.WithFaults(simnode.Faults{HoldAgent: &hold}))
	code, doc, errOut := fx.runJSON()
	n := fx.ts.Node()
	if n.HoldsReached() != 1 {
		t.Fatalf("the connection was not cut mid-swap\n%s", errOut)
	}
	if overlaps := n.SwapAgentOverlaps(); overlaps != 0 {
		t.Errorf("two agents changed the node at once %d time(s)", overlaps)
	}
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for name, p := range actions(doc) {
		if p.Action != "updated" || p.Error != "" {
			t.Errorf("%s = %+v, want updated (the swap finished on the node)", name, p)
		}
	}
	if !strings.Contains(errOut, "the swap ran to its end on the node") {
		t.Errorf("stderr does not say the swap finished:\n%s", errOut)
	}
	fx.assertHealthy()
	for name, dest := range map[string]string{"containerd": containerdExe, "kubelet": kubeletExe, "kube-proxy": kubeProxyExe} {
		if got := fx.content(dest); got != "MZ "+name+" v2\n" {
			t.Errorf("%s holds %q", dest, got)
		}
	}
	for _, p := range []string{ops.JournalPath, ops.LockPath, ops.SwapResultPath} {
		if n.Exists(p) {
			t.Errorf("%s left behind", p)
		}
	}
}
