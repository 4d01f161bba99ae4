package app

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// A fresh Windows Server: TrustedInstaller owns C:\Program Files (where
// containerd goes), the Containers feature is off, no firewall rule opens
// the kubelet's port. One join installs the feature and reboots once,
// opens the ports, registers containerd, the kubelet and kube-proxy with
// restart actions and ErrorControl Normal, gives the kubelet the
// cluster's DNS (kubeadm's kubelet-config) and logs that swdt logs reads;
// a second join is unchanged and does not reboot; --reset removes the
// rules (issue 32's "done when").
func TestJoinFreshWindowsServer(t *testing.T) {
	fx := newJoinFixture(t)
	n := fx.ts.Node()
	if owner, _ := n.OS().Owner(`C:\Program Files`); owner != winos.SIDTrustedInstaller {
		t.Fatalf("C:\\Program Files belongs to %s, not TrustedInstaller", owner)
	}
	if st, _ := n.Feature("Containers"); st != "Available" {
		t.Fatalf("Containers is %s on the fresh node", st)
	}

	// The cluster's DNS as kubeadm keeps it, and logs as upstream
	// writes them (kube-log-runner, containerd's --log-file).
	fx.writeWithLogRunner("v1.37.2")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kubelet-config"},
		Data: map[string]string{"kubelet": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDNS: [10.96.0.10]\nclusterDomain: cluster.local\n"}}
	if _, err := fx.cl.Client.CoreV1().ConfigMaps("kube-system").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	code, doc, errOut := fx.run("join")
	if code != exitcode.OK || len(doc.Nodes) != 1 {
		t.Fatalf("join: exit %d\n%s", code, errOut)
	}
	got := doc.Nodes[0]
	if got.Result != "changed" || got.Containers != "Installed" || !got.Rebooted || !slices.Equal(got.FirewallRules, []string{"swdt-kubelet-In-TCP", "swdt-kube-proxy-health-In-TCP"}) ||
		!slices.Equal(got.ServicesConfigured, []string{"kube-proxy", "kubelet", "containerd"}) {
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
	if conf, err := n.ReadFile(ops.JoinKubeletConfig); err != nil || !strings.Contains(string(conf), "10.96.0.10") || !strings.Contains(string(conf), "clusterDomain: cluster.local") {
		t.Errorf("the kubelet's config has no clusterDNS from kubelet-config (%v):\n%s", err, conf)
	}
	for _, tt := range []struct{ service, line string }{{"kubelet", "Kubelet version"}, {"containerd", "starting containerd"}} {
		if code, out, errOut := run(t, "logs", "--no-color", "-c", fx.config, "sim", tt.service); code != exitcode.OK || !strings.Contains(out, tt.line) {
			t.Errorf("swdt logs sim %s: exit %d, no %q:\n%s\n%s", tt.service, code, tt.line, out, errOut)
		}
	}
	for _, name := range []string{"kube-proxy", "kubelet", "containerd"} {
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
