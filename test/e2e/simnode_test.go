package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// TestSuiteOnSimnode runs the real-node suite against a simnode, so that
// the suite itself (backups, restore files, wins clean-up) is tested where
// no Windows node exists, and checks that it left the node as it found it.
func TestSuiteOnSimnode(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-builds Windows binaries and runs the whole flow; skipped with -short")
	}
	ts := simnode.StartTest(t)
	dir := t.TempDir()
	for _, name := range []string{"containerd", "kubelet", "wins"} {
		build := exec.Command("go", "build", "-ldflags", "-X main.name="+name, "-o", filepath.Join(dir, name+".exe"),
			"sigs.k8s.io/swdt/hack/demo/fakesvc")
		build.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s.exe: %v\n%s", name, err, out)
		}
	}
	binaries := []string{`C:\k\kubelet.exe`, `C:\Program Files\containerd\containerd.exe`}
	hashes := map[string]string{}
	for _, f := range binaries {
		hashes[f] = hashOn(t, ts, f)
	}

	spec := v1alpha1.NodeSpec{
		Credentials: ts.Credentials(),
		Setup:       v1alpha1.SetupSpec{ChocoPackages: []string{"vim"}},
		Kubernetes: v1alpha1.KubernetesSpec{Provisioners: []v1alpha1.ProvisionerSpec{
			{Name: "containerd", SourceURL: filepath.Join(dir, "containerd.exe"), Destination: `C:\Program Files\containerd\containerd.exe`},
			{Name: "kubelet", SourceURL: filepath.Join(dir, "kubelet.exe"), Destination: `C:\k\kubelet.exe`, Overwrite: true},
		}},
		Wins: &v1alpha1.WinsSpec{SourceURL: filepath.Join(dir, "wins.exe")},
	}
	data, err := json.Marshal(map[string]any{
		"apiVersion": "windows.k8s.io/v1alpha1", "kind": "Node", "metadata": map[string]string{"name": "sim"}, "spec": spec,
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "node.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	runSuite(t, path)
	if t.Failed() {
		return
	}
	// The suite's clean-ups ran when its subtests ended.
	after := ts.State()
	for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
		if svc := after.Services[name]; svc == nil || svc.Status != simnode.StatusRunning {
			t.Errorf("service %s is not Running after the suite: %+v", name, svc)
		}
	}
	if _, ok := after.Services["rancher-wins"]; ok {
		t.Error("the suite left rancher-wins installed on a node that had none")
	}
	for _, f := range binaries {
		if got := hashOn(t, ts, f); got != hashes[f] {
			t.Errorf("%s: sha256 %s after the suite, want the original %s", f, got, hashes[f])
		}
	}
}

// hashOn is the SHA-256 of the simulated node's file p.
func hashOn(t *testing.T, ts *simnode.TestServer, p string) string {
	t.Helper()
	sum, _, err := ts.Node().Hash(p)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}
