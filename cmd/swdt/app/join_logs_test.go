package app

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
)

// writeWithLogRunner writes the fixture's node file with a kube-log-runner
// provisioner (kube-log-runner.exe of the Kubernetes node binaries) for
// the kubelet's service, and a kube-proxy.
func (fx *joinFixture) writeWithLogRunner(version string) {
	fx.t.Helper()
	for name, content := range map[string][]byte{
		"kube-log-runner.exe": []byte("MZ kube-log-runner stand-in\n"),
		"kube-proxy.exe":      []byte("MZ kube-proxy stand-in\n"),
	} {
		if err := os.WriteFile(filepath.Join(fx.dir, name), content, 0o644); err != nil {
			fx.t.Fatal(err)
		}
	}
	fx.config = filepath.Join(fx.dir, "node.yaml")
	spec := nodeHeader("sim", fx.ts.Credentials()) + fmt.Sprintf(`  kubernetes:
    provisioners:
    - name: containerd
      sourceURL: ./containerd.exe
      destination: C:\Program Files\containerd\containerd.exe
    - name: kube-log-runner
      service: kubelet
      sourceURL: ./kube-log-runner.exe
      destination: C:\k\kube-log-runner.exe
    - name: kubelet
      version: %s
      sourceURL: ./kubelet.exe
      destination: C:\k\kubelet.exe
    - name: kube-proxy
      sourceURL: ./kube-proxy.exe
      destination: C:\k\kube-proxy.exe
    join:
      kubeconfig: %q
      timeout: 90s
`, version, fx.cl.Kubeconfig)
	if err := os.WriteFile(fx.config, []byte(spec), 0o600); err != nil {
		fx.t.Fatal(err)
	}
}

// A join's services log where swdt logs reads them: the kubelet and
// kube-proxy through kube-log-runner (registered as upstream registers
// them), containerd with its own --log-file. The kubelet under
// kube-log-runner is swapped as any kubelet, and its log goes on.
func TestJoinLogs(t *testing.T) {
	fx := newJoinFixture(t)
	fx.writeWithLogRunner("v1.37.2")
	code, doc, errOut := fx.run("join")
	if code != exitcode.OK || len(doc.Nodes) != 1 || doc.Nodes[0].Result != "changed" || !doc.Nodes[0].Node.Registered {
		t.Fatalf("join: exit %d\n%s", code, errOut)
	}

	st := fx.ts.State()
	for _, tt := range []struct {
		service, program string
		head             []string
	}{
		{"kubelet", `C:\k\kube-log-runner.exe`, []string{`-log-file=` + ops.JoinKubeletLog, `C:\k\kubelet.exe`, "--windows-service"}},
		{"kube-proxy", `C:\k\kube-log-runner.exe`, []string{`-log-file=` + ops.JoinKubeProxyLog, `C:\k\kube-proxy.exe`, "--windows-service"}},
		{"containerd", `C:\Program Files\containerd\containerd.exe`, []string{"--run-service", "--config", ops.JoinContainerdConfig, "--log-file", ops.JoinContainerdLog}},
	} {
		svc := st.Services[tt.service]
		if svc == nil || svc.Status != "Running" || svc.BinaryPath != tt.program || len(svc.Args) < len(tt.head) || !slices.Equal(svc.Args[:len(tt.head)], tt.head) {
			t.Errorf("service %s = %+v; want %s %q...", tt.service, svc, tt.program, tt.head)
		}
	}

	logs := func(service string) string {
		t.Helper()
		code, out, errOut := run(t, "logs", "-c", fx.config, "--no-color", "sim", service, "-n", "100")
		if code != exitcode.OK {
			t.Fatalf("swdt logs %s: exit %d\n%s", service, code, errOut)
		}
		return out
	}
	if out := logs("kubelet"); !strings.Contains(out, `"Kubelet version" kubeletVersion="v1.37.2"`) || !strings.Contains(out, "Successfully registered node win-join01") {
		t.Errorf("swdt logs kubelet shows no kubelet log:\n%s", out)
	}
	if out := logs("containerd"); !strings.Contains(out, `msg="starting containerd"`) {
		t.Errorf("swdt logs containerd shows no containerd log:\n%s", out)
	}

	if code, doc, errOut := fx.run("join"); code != exitcode.OK || doc.Nodes[0].Result != "unchanged" {
		t.Fatalf("second join: exit %d\n%s", code, errOut)
	}

	// The kubelet under kube-log-runner is swapped and confirmed by the
	// Node; its new build appends to the same log.
	fx.kubelet("v1.37.1")
	fx.writeWithLogRunner("v1.37.1")
	if code, _, errOut := run(t, "kubernetes", "-c", fx.config, "--no-color", "--cache-dir", filepath.Join(fx.dir, "cache")); code != exitcode.OK {
		t.Fatalf("swap: exit %d\n%s", code, errOut)
	}
	fx.cl.WaitKubeletVersion(t, "win-join01", "v1.37.1")
	if out := logs("kubelet"); !strings.Contains(out, `kubeletVersion="v1.37.2"`) || !strings.Contains(out, `kubeletVersion="v1.37.1"`) {
		t.Errorf("swdt logs kubelet after the swap:\n%s", out)
	}

	if code, doc, errOut := fx.run("join", "--reset"); code != exitcode.OK || doc.Nodes[0].Result != "removed" {
		t.Fatalf("reset: exit %d\n%s", code, errOut)
	}
	if fx.ts.Node().Exists(`C:\k\kube-log-runner.exe`) {
		t.Error(`C:\k\kube-log-runner.exe is still there after --reset`)
	}
}
