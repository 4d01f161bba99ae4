package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// joinFixture is a real control plane on loopback and a bare simnode (only
// OpenSSH) whose kubelet binary is simnode's simulated kubelet.
type joinFixture struct {
	t      *testing.T
	cl     *clustertest.Cluster
	ts     *simnode.TestServer
	dir    string
	config string
}

func newJoinFixture(t *testing.T, opts ...simnode.TestOption) *joinFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cl := clustertest.Start(t)
	opts = append([]simnode.TestOption{simnode.WithOptions(func(o *simnode.Options) { o.Bare = true; o.Hostname = "WIN-JOIN01" })}, opts...)
	fx := &joinFixture{t: t, cl: cl, dir: t.TempDir(), ts: simnode.StartTest(t, opts...)}
	fx.kubelet("v1.37.2")
	if err := os.WriteFile(filepath.Join(fx.dir, "containerd.exe"), []byte("MZ containerd stand-in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fx.write(cl.Kubeconfig, "v1.37.2")
	return fx
}

// kubelet writes the local kubelet build: a stand-in reporting version.
func (fx *joinFixture) kubelet(version string) {
	fx.t.Helper()
	if err := os.WriteFile(filepath.Join(fx.dir, "kubelet.exe"), simnode.KubeletBinary(version), 0o644); err != nil {
		fx.t.Fatal(err)
	}
}

func (fx *joinFixture) write(kubeconfig, version string) {
	fx.t.Helper()
	fx.config = filepath.Join(fx.dir, "node.yaml")
	spec := nodeHeader("sim", fx.ts.Credentials()) + fmt.Sprintf(`  kubernetes:
    provisioners:
    - name: containerd
      sourceURL: ./containerd.exe
      destination: C:\Program Files\containerd\containerd.exe
    - name: kubelet
      version: %s
      sourceURL: ./kubelet.exe
      destination: C:\k\kubelet.exe
    join:
      kubeconfig: %q
      labels:
        example.com/team: sig-windows
      taints: ["os=windows:NoSchedule"]
      timeout: 90s
`, version, kubeconfig)
	if err := os.WriteFile(fx.config, []byte(spec), 0o600); err != nil {
		fx.t.Fatal(err)
	}
}

func (fx *joinFixture) run(args ...string) (int, report.Join, string) {
	fx.t.Helper()
	var out, errb bytes.Buffer
	base := []string{"--no-color", "-o", "json", "-c", fx.config}
	code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, append(append([]string{args[0]}, base...), args[1:]...))
	var doc report.Join
	if code != 0 {
		raw, _ := os.ReadFile(fx.config)
		fx.t.Logf("stdout: %s\nstderr: %s\nconfig:\n%s", out.String(), errb.String(), raw)
	}
	if out.Len() > 0 && code == 0 {
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			fx.t.Fatalf("stdout is not JSON: %v\n%s\nstderr:\n%s", err, out.String(), errb.String())
		}
	}
	return code, doc, errb.String()
}

func (fx *joinFixture) node(name string) *corev1.Node {
	fx.t.Helper()
	n, err := fx.cl.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		fx.t.Fatalf("Node %s: %v", name, err)
	}
	return n
}

func (fx *joinFixture) tokens() int {
	fx.t.Helper()
	return fx.cl.BootstrapTokens(fx.t)
}

// A bare VM becomes a Node of the cluster; a second join changes nothing;
// a kubelet rebuild is reported by the Node; --reset undoes it all.
func TestJoinFreshNodeAndReset(t *testing.T) {
	fx := newJoinFixture(t)

	code, doc, errOut := fx.run("join", "-vv")
	if code != exitcode.OK || len(doc.Nodes) != 1 {
		t.Fatalf("join: exit %d\n%s", code, errOut)
	}
	// -vv logs every op's request, but never the bootstrap token in it.
	bootstrap, err := fx.ts.Node().ReadFile(ops.JoinBootstrapKubeconfig)
	token := regexp.MustCompile(`token: *"?([a-z0-9]{6}\.[a-z0-9]{16})`).FindSubmatch(bootstrap)
	if err != nil || token == nil {
		t.Fatalf("no bootstrap token in %s: %v\n%s", ops.JoinBootstrapKubeconfig, err, bootstrap)
	}
	if strings.Contains(errOut, string(token[1][7:])) {
		t.Errorf("join -vv printed the bootstrap token's secret")
	}
	if !strings.Contains(errOut, "join-write") || !strings.Contains(errOut, "<redacted>") {
		t.Errorf("join -vv logs no redacted join-write request:\n%s", errOut)
	}
	got := doc.Nodes[0]
	if got.Result != "changed" || got.NodeName != "win-join01" || !got.Node.Registered || got.Node.KubeletVersion != "v1.37.2" || got.Node.OS != "windows" {
		t.Fatalf("join = %+v\n%s", got.Report, errOut)
	}
	if !strings.Contains(got.Note, "network plugin") {
		t.Errorf("a NotReady node without a CNI gets no note: %q", got.Note)
	}
	n := fx.node("win-join01")
	if n.Labels["example.com/team"] != "sig-windows" || n.Labels[corev1.LabelOSStable] != "windows" {
		t.Errorf("labels = %v", n.Labels)
	}
	// The API server adds node.kubernetes.io/not-ready to a new Node.
	if !slices.ContainsFunc(n.Spec.Taints, func(tt corev1.Taint) bool {
		return tt.Key == "os" && tt.Value == "windows" && tt.Effect == corev1.TaintEffectNoSchedule
	}) {
		t.Errorf("taints = %v", n.Spec.Taints)
	}
	svc := fx.ts.State().Services["kubelet"]
	if svc == nil || svc.Status != "Running" || svc.BinaryPath != `C:\k\kubelet.exe` ||
		!slices.Contains(svc.Args, "--windows-service") || !slices.Contains(svc.Args, "--bootstrap-kubeconfig="+ops.JoinBootstrapKubeconfig) {
		t.Fatalf("kubelet service = %+v", svc)
	}
	if fx.tokens() != 0 {
		t.Errorf("the bootstrap token was not deleted after the join")
	}
	ctrd := fx.ts.State().Services["containerd"]
	if ctrd == nil || ctrd.Status != "Running" || !slices.Equal(ctrd.Args, []string{"--run-service", "--config", ops.JoinContainerdConfig, "--log-file", ops.JoinContainerdLog}) ||
		!slices.Equal(svc.Dependencies, []string{"containerd"}) || !fx.ts.Node().Exists(ops.JoinContainerdConfig) {
		t.Errorf("containerd service = %+v, kubelet depends on %v", ctrd, svc.Dependencies)
	}
	if !fx.ts.Node().Exists(ops.JoinKubeconfig) {
		t.Errorf("the kubelet wrote no %s (TLS bootstrap)", ops.JoinKubeconfig)
	}

	starts := svc.StartCount
	code, doc, errOut = fx.run("join")
	if code != exitcode.OK || doc.Nodes[0].Result != "unchanged" {
		t.Fatalf("second join: exit %d, %+v\n%s", code, doc.Nodes[0].Report, errOut)
	}
	if fx.ts.State().Services["kubelet"].StartCount != starts || fx.tokens() != 0 {
		t.Error("the second join restarted the kubelet or left a token")
	}

	// A rebuilt kubelet goes in through swdt kubernetes; the Node reports it.
	fx.kubelet("v1.37.1")
	fx.write(fx.cl.Kubeconfig, "v1.37.1")
	var out, errb bytes.Buffer
	if code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
		[]string{"kubernetes", "-c", fx.config, "--no-color", "--cache-dir", filepath.Join(fx.dir, "cache")}); code != exitcode.OK {
		t.Fatalf("swap: exit %d\n%s", code, errb.String())
	}
	fx.cl.WaitKubeletVersion(t, "win-join01", "v1.37.1")

	code, doc, errOut = fx.run("join", "--reset")
	if code != exitcode.OK || doc.Nodes[0].Result != "removed" {
		t.Fatalf("reset: exit %d, %+v\n%s", code, doc.Nodes[0].Report, errOut)
	}
	if _, err := fx.cl.Client.CoreV1().Nodes().Get(context.Background(), "win-join01", metav1.GetOptions{}); err == nil {
		t.Error("the Node is still there after --reset")
	}
	if st := fx.ts.State(); st.Services["kubelet"] != nil || st.Services["containerd"] != nil {
		t.Error("the kubelet or containerd service is still there after --reset")
	}
	for _, f := range []string{`C:\k\kubelet.exe`, `C:\Program Files\containerd\containerd.exe`, ops.JoinContainerdConfig, ops.JoinKubeconfig, ops.JoinBootstrapKubeconfig, ops.JoinKubeletConfig, ops.JoinCAFile} {
		if fx.ts.Node().Exists(f) {
			t.Errorf("%s is still there after --reset", f)
		}
	}
}

// Bad input is refused with a clear error before anything changes.
func TestJoinRefusesBeforeChanging(t *testing.T) {
	fx := newJoinFixture(t)
	unreachable := filepath.Join(fx.dir, "unreachable.kubeconfig")
	raw, err := os.ReadFile(fx.cl.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(unreachable, bytes.Replace(raw, []byte(strings.TrimPrefix(fx.cl.Server, "https://")), []byte("127.0.0.1:1"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	taken := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "win-join01"}}

	for _, tc := range []struct {
		name, kubeconfig, version string
		before                    func()
		want                      string
	}{
		{name: "unreachable control plane", kubeconfig: unreachable, version: "v1.37.2", want: "cannot reach the control plane"},
		{name: "kubelet newer than the API server", kubeconfig: fx.cl.Kubeconfig, version: "v1.38.0", want: "newer than the API server"},
		{name: "kubelet four minors older", kubeconfig: fx.cl.Kubeconfig, version: "v1.33.0", want: "more than three minor versions older"},
		{name: "node name taken by another machine", kubeconfig: fx.cl.Kubeconfig, version: "v1.37.2", want: "another machine has that name",
			before: func() {
				if _, err := fx.cl.Client.CoreV1().Nodes().Create(context.Background(), taken, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			fx.write(tc.kubeconfig, tc.version)
			code, _, errOut := fx.run("join")
			if code == exitcode.OK || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "nothing") && tc.name == "node name taken by another machine" {
				t.Fatalf("exit %d, want an error saying %q:\n%s", code, tc.want, errOut)
			}
			if fx.ts.State().Services["kubelet"] != nil || fx.ts.Node().Exists(ops.JoinBootstrapKubeconfig) || fx.tokens() != 0 {
				t.Fatal("the refused join changed the node or the cluster")
			}
		})
	}
}
