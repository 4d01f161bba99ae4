package app

import (
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// A fresh Windows Server: TrustedInstaller owns C:\Program Files (where
// containerd goes), the Containers feature is off, no firewall rule opens
// the kubelet's port. One join installs the feature and reboots once,
// opens the port, and registers containerd and the kubelet with restart
// actions and ErrorControl Normal; a second join is unchanged and does
// not reboot; --reset removes the rule.
func TestJoinFreshWindowsServer(t *testing.T) {
	fx := newJoinFixture(t)
	n := fx.ts.Node()
	if owner, _ := n.OS().Owner(`C:\Program Files`); owner != winos.SIDTrustedInstaller {
		t.Fatalf("C:\\Program Files belongs to %s, not TrustedInstaller", owner)
	}
	if st, _ := n.Feature("Containers"); st != "Available" {
		t.Fatalf("Containers is %s on the fresh node", st)
	}

	code, doc, errOut := fx.run("join")
	if code != exitcode.OK || len(doc.Nodes) != 1 {
		t.Fatalf("join: exit %d\n%s", code, errOut)
	}
	got := doc.Nodes[0]
	if got.Result != "changed" || got.Containers != "Installed" || !got.Rebooted || !slices.Equal(got.FirewallRules, []string{"swdt-kubelet-In-TCP"}) ||
		!slices.Equal(got.ServicesConfigured, []string{"kubelet", "containerd"}) {
		t.Errorf("join: %+v", got.Report)
	}
	for _, step := range []string{"checking the Windows feature Containers", "installed the Windows feature Containers; it needs a reboot", "rebooting to finish the Windows feature Containers"} {
		if !strings.Contains(errOut, step) {
			t.Errorf("the join did not say %q:\n%s", step, errOut)
		}
	}
	st := fx.ts.State()
	if len(st.Boots) != 1 || st.Features["containers"] != "Installed" {
		t.Errorf("after the join: %d boots, Containers %q; want one boot and Installed", len(st.Boots), st.Features["containers"])
	}
	for _, name := range []string{"vmcompute", "hns"} {
		if st.Services[name] == nil || st.Services[name].Status != simnode.StatusRunning {
			t.Errorf("service %s after the join: %+v", name, st.Services[name])
		}
	}
	if r := st.Firewall["swdt-kubelet-in-tcp"]; r == nil || !r.Enabled || r.LocalPort != "10250" || r.Direction != "Inbound" {
		t.Errorf("the kubelet's rule: %+v", r)
	}
	for _, name := range []string{"kubelet", "containerd"} {
		svc := st.Services[name]
		if svc.ErrorControl != simnode.ErrorControlNormal || svc.Recovery == nil || len(svc.Recovery.Actions) != 3 ||
			svc.Recovery.Actions[0] != (simnode.RecoveryAction{Type: "restart", Delay: 10 * time.Second}) || svc.Recovery.ResetPeriod != 24*time.Hour {
			t.Errorf("service %s: ErrorControl %q, recovery %+v", name, svc.ErrorControl, svc.Recovery)
		}
	}

	code, doc, errOut = fx.run("join")
	if code != exitcode.OK || doc.Nodes[0].Result != "unchanged" || doc.Nodes[0].Rebooted || len(fx.ts.State().Boots) != 1 {
		t.Fatalf("second join: exit %d, %+v, %d boots\n%s", code, doc.Nodes[0].Report, len(fx.ts.State().Boots), errOut)
	}

	code, doc, errOut = fx.run("join", "--reset")
	if code != exitcode.OK || !slices.Contains(doc.Nodes[0].Removed, "firewall rule swdt-kubelet-In-TCP") {
		t.Fatalf("reset: exit %d, %+v\n%s", code, doc.Nodes[0].Report, errOut)
	}
	if _, ok := n.FirewallRule("swdt-kubelet-In-TCP"); ok {
		t.Error("the kubelet's rule is still there after --reset")
	}
}
