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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// netJoinFixture is the join on separate machines: the control plane on
// one, the node (a simnode process) on another, and swdt on the laptop
// with a kind-style kubeconfig (the API server on the laptop's loopback).
type netJoinFixture struct {
	t   *testing.T
	cl  *clustertest.Cluster
	m   *clustertest.Machine
	dir string
}

func newNetJoinFixture(t *testing.T, opts ...clustertest.Option) *netJoinFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	clustertest.NetworkSkip(t)
	cl := clustertest.Start(t, append([]clustertest.Option{clustertest.Separate()}, opts...)...)
	fx := &netJoinFixture{t: t, cl: cl, m: cl.Net.StartMachine(t, "WIN-NET01"), dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(fx.dir, "kubelet.exe"), simnode.KubeletBinary(clustertest.Version), 0o644); err != nil {
		t.Fatal(err)
	}
	return fx
}

// config writes the node file: the kubelet, the cluster's laptop
// kubeconfig, and apiServerEndpoint when endpoint is set.
func (fx *netJoinFixture) config(endpoint string) string {
	fx.t.Helper()
	spec := nodeHeader("win", v1alpha1.CredentialsSpec{Hostname: fx.m.Addr, Username: fx.m.User, PrivateKey: fx.m.KeyFile, KnownHostsFile: fx.m.KnownHostsFile}) +
		fmt.Sprintf(`  kubernetes:
    provisioners:
    - name: kubelet
      version: %s
      sourceURL: ./kubelet.exe
      destination: C:\k\kubelet.exe
    join:
      kubeconfig: %q
      timeout: 90s
`, clustertest.Version, fx.cl.Kubeconfig)
	if endpoint != "" {
		spec += fmt.Sprintf("      apiServerEndpoint: %q\n", endpoint)
	}
	path := filepath.Join(fx.dir, "node.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o600); err != nil {
		fx.t.Fatal(err)
	}
	return path
}

func (fx *netJoinFixture) join(config string, args ...string) (int, report.Join, string) {
	fx.t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
		append([]string{"join", "--no-color", "-o", "json", "-c", config}, args...))
	var doc report.Join
	if code == exitcode.OK {
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			fx.t.Fatalf("stdout is not JSON: %v\n%s", err, out.String())
		}
	}
	return code, doc, errb.String()
}

// tokens counts the cluster's bootstrap token Secrets.
func (fx *netJoinFixture) tokens() int {
	fx.t.Helper()
	return fx.cl.BootstrapTokens(fx.t)
}

// registered checks that the join registered the Node through the control
// plane's address: the kubelet on the node did the TLS bootstrap there.
func (fx *netJoinFixture) registered(code int, doc report.Join, errOut, source string) {
	fx.t.Helper()
	if code != exitcode.OK || len(doc.Nodes) != 1 {
		fx.t.Fatalf("join: exit %d\n%s", code, errOut)
	}
	got := doc.Nodes[0]
	if got.Result != "changed" || !got.Node.Registered || got.Node.KubeletVersion != clustertest.Version {
		fx.t.Fatalf("join = %+v\n%s", got.Report, errOut)
	}
	if got.Endpoint == nil || got.Endpoint.Server != fx.cl.NodeServer || got.Endpoint.Source != source {
		fx.t.Errorf("the join used %+v, want %s from %s", got.Endpoint, fx.cl.NodeServer, source)
	}
	conf, err := fx.m.ReadFile(ops.JoinKubeconfig)
	if err != nil || !strings.Contains(string(conf), "server: "+fx.cl.NodeServer) {
		fx.t.Errorf("the kubelet's %s (%v) does not name %s:\n%s", ops.JoinKubeconfig, err, fx.cl.NodeServer, conf)
	}
	if fx.tokens() != 0 {
		fx.t.Error("the bootstrap token was not deleted after the join")
	}
}

// With a kind-style kubeconfig (the API server on the laptop's loopback)
// and nothing else, the node would dial its own loopback: the join
// refuses before it changes anything, naming the address and the fix.
// With apiServerEndpoint, the same join registers the Node.
func TestJoinSeparateMachinesLoopbackThenEndpoint(t *testing.T) {
	fx := newNetJoinFixture(t)
	features, err := fx.m.Features()
	if err != nil {
		t.Fatal(err)
	}

	code, _, errOut := fx.join(fx.config(""))
	for _, want := range []string{
		"the node cannot reach the API server at " + fx.cl.Server + " (the kubeconfig's server)",
		"connection refused", "127.0.0.1 is the node's own loopback",
		"networking.apiServerAddress", "spec.kubernetes.join.apiServerEndpoint", "nothing was changed",
	} {
		if code == exitcode.OK || !strings.Contains(errOut, want) {
			t.Errorf("join: exit %d, want a refusal saying %q:\n%s", code, want, errOut)
		}
	}
	if fx.tokens() != 0 {
		t.Error("the refused join created a bootstrap token")
	}
	for _, f := range append([]string{`C:\k\kubelet.exe`}, ops.JoinCAFile, ops.JoinBootstrapKubeconfig, ops.JoinKubeletConfig) {
		if fx.m.Exists(f) {
			t.Errorf("the refused join wrote %s", f)
		}
	}
	if svcs, err := fx.m.Services(); err != nil || svcs["kubelet"] != "" || svcs["vmcompute"] != "" {
		t.Errorf("the refused join registered the kubelet or installed Containers (%v): %v", err, svcs)
	}
	if after, err := fx.m.Features(); err != nil || after["containers"] != features["containers"] {
		t.Errorf("the refused join changed the Containers feature (%v): %q, was %q", err, after["containers"], features["containers"])
	}

	code, doc, errOut := fx.join(fx.config(fx.cl.Net.CPAddr.String() + ":6443"))
	fx.registered(code, doc, errOut, "spec.kubernetes.join.apiServerEndpoint")
}

// With kube-public/cluster-info (a kubeadm-made cluster), the join takes
// the node's address of the API server from it, as kubeadm join does;
// --reset knows the node's kubelet.conf, which names that address, for
// this cluster's and deletes the Node.
func TestJoinSeparateMachinesClusterInfo(t *testing.T) {
	fx := newNetJoinFixture(t, clustertest.WithClusterInfo())
	config := fx.config("")
	code, doc, errOut := fx.join(config)
	fx.registered(code, doc, errOut, "kube-public/cluster-info")

	code, doc, errOut = fx.join(config, "--reset")
	if code != exitcode.OK || len(doc.Nodes) != 1 || doc.Nodes[0].Result != "removed" {
		t.Fatalf("join --reset: exit %d\n%s", code, errOut)
	}
	if _, err := fx.cl.Client.CoreV1().Nodes().Get(context.Background(), "win-net01", metav1.GetOptions{}); err == nil {
		t.Errorf("the Node is still there after --reset:\n%s", errOut)
	}
}
