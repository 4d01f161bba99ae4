package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/provision"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// runDoc runs a command of the fixture's node file with -o json and
// decodes its stdout into doc.
func (fx *joinFixture) runDoc(doc any, args ...string) (int, string) {
	fx.t.Helper()
	var out, errb bytes.Buffer
	base := []string{"--no-color", "-o", "json", "-c", fx.config, "--cache-dir", filepath.Join(fx.dir, "cache")}
	code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, append(append([]string{args[0]}, base...), args[1:]...))
	if err := json.Unmarshal(out.Bytes(), doc); err != nil {
		fx.t.Fatalf("%s: stdout is not JSON: %v\n%s\nstderr:\n%s", args[0], err, out.String(), errb.String())
	}
	return code, errb.String()
}

// build writes the local kubelet build and points the node file at the
// provisioner version the Node must report, with the cluster check
// bounded by timeout.
func (fx *joinFixture) build(content []byte, version, timeout string) {
	fx.t.Helper()
	if err := os.WriteFile(filepath.Join(fx.dir, "kubelet.exe"), content, 0o644); err != nil {
		fx.t.Fatal(err)
	}
	fx.write(fx.cl.Kubeconfig, version)
	raw, err := os.ReadFile(fx.config)
	if err != nil {
		fx.t.Fatal(err)
	}
	if err := os.WriteFile(fx.config, bytes.Replace(raw, []byte("timeout: 90s"), []byte("timeout: "+timeout), 1), 0o600); err != nil {
		fx.t.Fatal(err)
	}
}

// kubeletOf is the kubelet's result in a node's swdt kubernetes report.
func kubeletOf(t *testing.T, n report.KubernetesNode) report.KubernetesProvisioner {
	t.Helper()
	for _, p := range n.Provisioners {
		if p.Name == "kubelet" {
			return p
		}
	}
	t.Fatalf("no kubelet in %+v", n.Provisioners)
	return report.KubernetesProvisioner{}
}

// A kubelet swap on a joined node is proven by the cluster: a build with
// another version stamp passes when the Node reports it and renews its
// Lease; a build the Node never confirms (another version than the
// provisioner's, or no kubelet at all) is rolled back, the old kubelet
// running again and the Node reporting it; swdt status shows the Node
// beside the kubelet's service.
func TestKubeletSwapClusterCheck(t *testing.T) {
	fx := newJoinFixture(t)
	const node = "win-join01"
	if code, doc, errOut := fx.run("join"); code != exitcode.OK || doc.Nodes[0].Node.KubeletVersion != "v1.37.2" {
		t.Fatalf("join: exit %d\n%s", code, errOut)
	}

	fx.build(simnode.KubeletBinary("v1.37.1"), "v1.37.1", "90s")
	var kube report.Kubernetes
	code, errOut := fx.runDoc(&kube, "kubernetes")
	if code != exitcode.OK || len(kube.Nodes) != 1 {
		t.Fatalf("swap: exit %d, %+v\n%s", code, kube, errOut)
	}
	got := kube.Nodes[0]
	if p := kubeletOf(t, got); p.Action != string(hotswap.ActionUpdated) || got.Cluster == nil || got.Cluster.Result != provision.ClusterConfirmed ||
		got.Cluster.Node.KubeletVersion != "v1.37.1" || got.Cluster.Server != fx.cl.Server {
		t.Fatalf("swap = %+v, cluster %+v\n%s", p, got.Cluster, errOut)
	}
	if v := fx.node(node).Status.NodeInfo.KubeletVersion; v != "v1.37.1" {
		t.Errorf("the Node reports kubelet %s after a confirmed swap", v)
	}

	good := simnode.KubeletBinary("v1.37.1")
	for _, tc := range []struct {
		name  string
		build []byte
		// version is the provisioner's: what the Node must report.
		version string
		reason  string
	}{
		{name: "a build with another version stamp", build: simnode.KubeletBinary("v1.36.9"), version: "v1.37.0",
			reason: "the Node reports kubelet v1.36.9, not v1.37.0"},
		{name: "a build that never registers", build: []byte("MZ a kubelet build that never talks to the API server"), version: "v1.37.0",
			reason: "the Node reports kubelet v1.37.1, not v1.37.0"},
		{name: "no kubelet at all, and no version to compare", build: []byte("MZ not a kubelet"), version: "",
			reason: "its Lease was not renewed since the kubelet started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx.build(tc.build, tc.version, "10s")
			var kube report.Kubernetes
			code, errOut := fx.runDoc(&kube, "kubernetes")
			if code == exitcode.OK || len(kube.Nodes) != 1 {
				t.Fatalf("exit %d, %+v\n%s", code, kube, errOut)
			}
			got := kube.Nodes[0]
			p := kubeletOf(t, got)
			if p.Action != string(hotswap.ActionRolledBack) || !strings.Contains(p.Error, "the cluster did not confirm the new kubelet within 10s") ||
				!strings.Contains(p.Error, tc.reason) || !strings.Contains(p.Error, "rolled back: the old binary runs again") {
				t.Fatalf("kubelet = %+v\n%s", p, errOut)
			}
			if got.Cluster == nil || got.Cluster.Result != provision.ClusterRolledBack || !strings.Contains(errOut, tc.reason) {
				t.Errorf("cluster = %+v; stderr:\n%s", got.Cluster, errOut)
			}
			n := fx.ts.Node()
			if b, _ := n.ReadFile(`C:\k\kubelet.exe`); !bytes.Equal(b, good) {
				t.Errorf("kubelet.exe holds %q, want the confirmed build back", b)
			}
			if b, _ := n.ReadFile(`C:\k\kubelet.exe.swdt-failed`); !bytes.Equal(b, tc.build) {
				t.Errorf("the rolled-back build was not kept as .swdt-failed: %q", b)
			}
			if svc := fx.ts.State().Services["kubelet"]; svc == nil || svc.Status != simnode.StatusRunning {
				t.Fatalf("kubelet service after the rollback: %+v", svc)
			}
			fx.cl.WaitKubeletVersion(t, node, "v1.37.1")
		})
	}

	// The Node beside the kubelet's service, in JSON and as text.
	fx.build(good, "v1.37.1", "90s")
	var st report.Status
	if code, errOut := fx.runDoc(&st, "status"); code != exitcode.OK || len(st.Nodes) != 1 {
		t.Fatalf("status: exit %d\n%s", code, errOut)
	}
	found := false
	for _, b := range st.Nodes[0].Binaries {
		if b.Name != "kubelet" {
			continue
		}
		found = true
		if b.Node == nil || !b.Node.Registered || b.Node.Name != node || b.Node.KubeletVersion != "v1.37.1" || b.Node.Ready != corev1.ConditionFalse || b.Status != "Running" {
			t.Errorf("status kubelet = %+v, node %+v", b, b.Node)
		}
	}
	if !found {
		t.Fatalf("status has no kubelet: %+v", st.Nodes[0].Binaries)
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
		[]string{"status", "--no-color", "-c", fx.config, "--cache-dir", filepath.Join(fx.dir, "cache")}); code != exitcode.OK ||
		!strings.Contains(out.String(), "Node NotReady, v1.37.1") {
		t.Errorf("status: exit %d, stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}

	// Rebuilds sent encoded (as over a VPN): the second is a patch against
	// the first, and goes in one op (no inspect) with the cluster's
	// reading of the Node before it; the cluster confirms each.
	for i, version := range []string{"v1.37.3", "v1.37.4"} {
		fx.build(simnode.KubeletBinary(version), version, "90s")
		var kube report.Kubernetes
		code, errOut := fx.runDoc(&kube, "kubernetes", "--compress", "1")
		if code != exitcode.OK || len(kube.Nodes) != 1 {
			t.Fatalf("%s: exit %d, %+v\n%s", version, code, kube, errOut)
		}
		got := kube.Nodes[0]
		if p := kubeletOf(t, got); p.Action != string(hotswap.ActionUpdated) || got.Cluster == nil || got.Cluster.Result != provision.ClusterConfirmed ||
			got.Cluster.Node.KubeletVersion != version {
			t.Fatalf("%s: kubelet %+v, cluster %+v\n%s", version, p, got.Cluster, errOut)
		}
		if oneOp := !strings.Contains(errOut, "inspecting"); i == 1 && (!oneOp || kubeletOf(t, got).Transfer != hotswap.TransferPatch) {
			t.Errorf("%s: in one op %v, sent as %s, want a patch in one op\n%s", version, oneOp, kubeletOf(t, got).Transfer, errOut)
		}
	}

	// Under --watch the Node's name (the node's host name: the join
	// section names none) is asked of the node once, not every rebuild.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wout, werr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, Streams{In: strings.NewReader(""), Out: &wout, ErrOut: &werr}, []string{"kubernetes", "--no-color", "-o", "json", "-v",
			"-c", fx.config, "--cache-dir", filepath.Join(fx.dir, "cache"), "--watch", "--debounce", "100ms", "--compress", "1"})
	}()
	if !waitFor(t, func() bool { return strings.Contains(werr.String(), "watching") }) {
		t.Fatalf("the watch did not start:\n%s", werr.String())
	}
	for i := 1; i <= 2; i++ {
		// The same version stamp, other bytes: the node file's version
		// is read once.
		if err := os.WriteFile(filepath.Join(fx.dir, "kubelet.exe"), append(simnode.KubeletBinary("v1.37.4"), fmt.Sprintf("\nrebuild %d\n", i)...), 0o644); err != nil {
			t.Fatal(err)
		}
		if !waitFor(t, func() bool { return strings.Count(wout.String(), `"confirmed"`) == i }) {
			t.Fatalf("rebuild %d was not confirmed:\n%s\n%s", i, wout.String(), werr.String())
		}
	}
	cancel()
	if code := <-done; code != exitcode.OK {
		t.Errorf("--watch: exit %d\n%s", code, werr.String())
	}
	if n := strings.Count(werr.String(), "op=join-inspect"); n != 1 {
		t.Errorf("the node's host name was asked %d times in two rebuilds, want once\n%s", n, werr.String())
	}
}
