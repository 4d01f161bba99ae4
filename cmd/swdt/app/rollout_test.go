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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/rollout"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// rolloutFile writes a rollout node file over the cluster of kubeconfig.
func rolloutFile(t *testing.T, dir, kubeconfig string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "kubelet.exe"), simnode.KubeletBinary("v1.37.3"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "rollout.yaml")
	doc := fmt.Sprintf(`apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: workers
spec:
  kubernetes:
    provisioners:
    - name: kubelet
      version: v1.37.3
      sourceURL: ./kubelet.exe
      destination: 'C:\k\kubelet.exe'
    rollout:
      kubeconfig: %q
      selector:
        matchLabels: {example.com/pool: canary}
      maxUnavailable: 50%%
`, kubeconfig)
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// swdt rollout: --dry-run selects the Windows Nodes of the pool and
// changes nothing, in JSON and as a table; a user without the rights is
// refused (exit 1) before anything changes; a file with no credentials
// rolls a Node through the Kubernetes API, with no SSH connection; --reset
// then deletes the state and swdt's namespace; a file without a rollout
// section is a usage error.
func TestRolloutCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cl := clustertest.Start(t)
	ctx := context.Background()
	for _, n := range []struct{ name, os, pool string }{
		{"win-b", "windows", "canary"}, {"win-a", "windows", "canary"}, {"win-c", "windows", "stable"}, {"linux-a", "linux", "canary"},
	} {
		if _, err := cl.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name,
			Labels: map[string]string{corev1.LabelOSStable: n.os, "example.com/pool": n.pool}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(ctx, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, append([]string{"rollout", "--no-color"}, args...))
		return code, out.String(), errb.String()
	}

	file := rolloutFile(t, dir, cl.Kubeconfig)
	code, out, errOut := run("-c", file, "--dry-run", "-o", "json")
	var doc struct {
		Kind string `json:"kind"`
		rollout.Report
	}
	if err := json.Unmarshal([]byte(out), &doc); code != exitcode.OK || err != nil {
		t.Fatalf("--dry-run -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if doc.Kind != "RolloutReport" || len(doc.Nodes) != 2 || doc.Nodes[0].Name != "win-a" || doc.Nodes[1].Name != "win-b" ||
		doc.Nodes[0].Result != rollout.ResultWouldChange || doc.MaxUnavailable != 1 {
		t.Errorf("--dry-run -o json = %+v", doc)
	}
	code, out, errOut = run("-c", file, "--dry-run")
	if code != exitcode.OK || !strings.Contains(out, "NODE") || !strings.Contains(out, "win-a") || strings.Contains(out, "win-c") {
		t.Errorf("--dry-run: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := cl.Client.CoreV1().ConfigMaps(rollout.Namespace).Get(ctx, rollout.ConfigMapName("workers"), metav1.GetOptions{}); err == nil {
		t.Error("--dry-run wrote the rollout's state")
	}

	raw, err := cl.NodeKubeconfig("win-a")
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "node.kubeconfig")
	if err := os.WriteFile(kc, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run("-c", rolloutFile(t, dir, kc))
	// The default transport's rights are checked with the rollout's own.
	if code != exitcode.Failure || !strings.Contains(errOut, "may not") || !strings.Contains(errOut, "nothing was changed") ||
		!strings.Contains(errOut, "create pods/exec in namespace swdt-system") {
		t.Errorf("as a Node's user: exit %d\n%s", code, errOut)
	}

	// The default transport, from the command: a Node reached through
	// its kubelet only, the file naming no credentials.
	ts := cl.StartKubeletNode(t, "win-k")
	if _, err := cl.Client.CoreV1().Nodes().Patch(ctx, "win-k", types.MergePatchType, []byte(`{"metadata":{"labels":{"example.com/pool":"kube"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	kfile := rolloutFile(t, dir, cl.Kubeconfig)
	raw, err = os.ReadFile(kfile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kfile, []byte(strings.Replace(string(raw), "example.com/pool: canary", "example.com/pool: kube", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run("-c", kfile, "--cache-dir", filepath.Join(dir, "cache"))
	if n, err := cl.Client.CoreV1().Nodes().Get(ctx, "win-k", metav1.GetOptions{}); code != exitcode.OK || err != nil || n.Status.NodeInfo.KubeletVersion != "v1.37.3" {
		t.Errorf("rollout through the Kubernetes API: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if got := ts.Connections(); got != 0 {
		t.Errorf("the Node saw %d SSH connections, want none", got)
	}

	// --reset deletes the rollout's state and swdt's namespace.
	code, out, errOut = run("-c", kfile, "--reset")
	if code != exitcode.OK || !strings.Contains(out+errOut, "deleted its state") {
		t.Errorf("--reset: exit %d\n%s\n%s", code, out, errOut)
	}
	if ns, err := cl.Client.CoreV1().Namespaces().Get(ctx, rollout.Namespace, metav1.GetOptions{}); err == nil && ns.DeletionTimestamp == nil {
		t.Errorf("namespace %s after --reset: not being deleted", rollout.Namespace)
	}

	plain := filepath.Join(dir, "plain.yaml")
	if err := os.WriteFile(plain, []byte(nodeHeader("win", simnode.StartTest(t).Credentials())), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut = run("-c", plain); code != exitcode.Usage || !strings.Contains(errOut, "spec.kubernetes.rollout") {
		t.Errorf("without a rollout section: exit %d\n%s", code, errOut)
	}
}

// A rollout file validates without a hostname, and says where its nodes
// come from.
func TestValidateRolloutFile(t *testing.T) {
	file := rolloutFile(t, t.TempDir(), filepath.Join(t.TempDir(), "kubeconfig"))
	var out, errb bytes.Buffer
	code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, []string{"config", "validate", "--no-color", "-c", file})
	if code != exitcode.OK || !strings.Contains(out.String(), "workers  each Node the rollout selects  1 (kubelet)") {
		t.Errorf("config validate: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}

// rolloutFile writes a rollout of the build the join fixture's node was
// joined with, over the Nodes of its team: after the join, every Node has
// it (unchanged).
func (fx *joinFixture) rolloutFile(t *testing.T) string {
	t.Helper()
	c := fx.ts.Credentials()
	file := filepath.Join(fx.dir, "rollout.yaml")
	doc := fmt.Sprintf(`apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: team
spec:
  credentials:
    hostname: %q
    username: %s
    privateKey: %q
    knownHostsFile: %q
  kubernetes:
    provisioners:
    - name: kubelet
      version: v1.37.2
      sourceURL: ./kubelet.exe
      destination: 'C:\k\kubelet.exe'
    rollout:
      kubeconfig: %q
      selector:
        matchLabels: {example.com/team: sig-windows}
      transport: SSH
`, c.Hostname, c.Username, c.PrivateKey, c.KnownHostsFile, fx.cl.Kubeconfig)
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}
