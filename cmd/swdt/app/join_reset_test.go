package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// shimDestination is where the join installs containerd's shim.
const shimDestination = `C:\Program Files\containerd\containerd-shim-runhcs-v1.exe`

// withShim adds containerd's shim to the node file, as a helper of
// containerd's service.
func (fx *joinFixture) withShim() {
	fx.t.Helper()
	if err := os.WriteFile(filepath.Join(fx.dir, "shim.exe"), []byte("MZ shim stand-in\n"), 0o644); err != nil {
		fx.t.Fatal(err)
	}
	raw, err := os.ReadFile(fx.config)
	if err != nil {
		fx.t.Fatal(err)
	}
	raw = bytes.Replace(raw, []byte("    join:\n"), []byte(`    - name: containerd-shim
      service: containerd
      sourceURL: ./shim.exe
      destination: `+shimDestination+`
    join:
`), 1)
	if err := os.WriteFile(fx.config, raw, 0o600); err != nil {
		fx.t.Fatal(err)
	}
}

// kubeconfig writes a variant of the cluster's admin kubeconfig (change
// edits it) and returns its path.
func kubeconfigVariant(t *testing.T, cl *clustertest.Cluster, name string, change func(cfg *clientcmdapi.Config)) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(cl.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	change(cfg)
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// swdt join --reset resets the node even when the cluster is gone (kind
// delete cluster removes its context from the kubeconfig), unreachable,
// refuses the credentials, or is not the one the node joined: it ends the
// pod sandboxes' shims, removes the services and files, says what it
// left in the cluster and why, and exits 3. The Node is deleted only in
// the cluster the node joined.
func TestJoinResetWithoutTheCluster(t *testing.T) {
	fx := newJoinFixture(t)
	tests := []struct {
		name string
		// kubeconfig is the kubeconfig the reset gets.
		kubeconfig func(t *testing.T) string
		// wantLeft are what the reset must report left in the cluster,
		// each as an object's start and a word of its reason.
		wantLeft [][2]string
	}{
		{name: "kind delete cluster: the context is gone", kubeconfig: func(t *testing.T) string {
			return kubeconfigVariant(t, fx.cl, "deleted", func(cfg *clientcmdapi.Config) {
				cfg.Contexts, cfg.Clusters, cfg.AuthInfos = map[string]*clientcmdapi.Context{}, map[string]*clientcmdapi.Cluster{}, map[string]*clientcmdapi.AuthInfo{}
			})
		}, wantLeft: [][2]string{{"Node win-join01", "has no context"}, {"kube-proxy's token Secret", "has no context"}, {"swdt's bootstrap tokens", "has no context"}}},
		{name: "the API server refuses the credentials", kubeconfig: func(t *testing.T) string {
			return kubeconfigVariant(t, fx.cl, "refused", func(cfg *clientcmdapi.Config) {
				for _, u := range cfg.AuthInfos {
					*u = clientcmdapi.AuthInfo{Token: "abcdef.0123456789abcdef"}
				}
			})
		}, wantLeft: [][2]string{{"Node win-join01", "refused the credentials"}, {"kube-proxy's token Secret", "refused"}, {"swdt's bootstrap tokens", "refused"}}},
		{name: "the kubeconfig names an unreachable cluster", kubeconfig: func(t *testing.T) string {
			return kubeconfigVariant(t, fx.cl, "unreachable", func(cfg *clientcmdapi.Config) {
				for _, c := range cfg.Clusters {
					c.Server = "https://127.0.0.1:1"
				}
			})
		}, wantLeft: [][2]string{{"Node win-join01", "not to the kubeconfig's"}, {"kube-proxy's token Secret", "cannot reach"}, {"swdt's bootstrap tokens", "cannot reach"}}},
		{name: "the node joined another cluster than the kubeconfig's", kubeconfig: func(t *testing.T) string {
			return kubeconfigVariant(t, fx.cl, "other", func(cfg *clientcmdapi.Config) {
				for _, c := range cfg.Clusters {
					c.Server = strings.Replace(c.Server, "127.0.0.1", "localhost", 1)
				}
			})
		}, wantLeft: [][2]string{{"Node win-join01", "not to the kubeconfig's"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx.write(fx.cl.Kubeconfig, "v1.37.2")
			fx.withShim()
			if code, _, errOut := fx.run("join"); code != exitcode.OK {
				t.Fatalf("join: exit %d\n%s", code, errOut)
			}
			shim, err := fx.ts.Node().StartPodSandbox("pod-" + strings.Fields(tt.name)[0])
			if err != nil {
				t.Fatal(err)
			}

			fx.write(tt.kubeconfig(t), "v1.37.2")
			fx.withShim()
			var doc report.Join
			code, errOut := fx.runDoc(&doc, "join", "--reset")
			if code != exitcode.Partial || len(doc.Nodes) != 1 || doc.Nodes[0].Report == nil {
				t.Fatalf("reset: exit %d, want %d with a report\n%s", code, exitcode.Partial, errOut)
			}
			rep := doc.Nodes[0].Report
			if st := fx.ts.State(); st.Services["kubelet"] != nil || st.Services["containerd"] != nil {
				t.Error("the kubelet or containerd service is still there after --reset")
			}
			for _, f := range []string{`C:\k\kubelet.exe`, `C:\Program Files\containerd\containerd.exe`, shimDestination, ops.JoinKubeconfig, ops.JoinBootstrapKubeconfig, ops.JoinCAFile} {
				if fx.ts.Node().Exists(f) {
					t.Errorf("%s is still there after --reset", f)
				}
			}
			if len(rep.Ended) != 1 || rep.Ended[0].PID != shim || len(rep.InUse) != 0 {
				t.Errorf("ended %+v, in use %+v; want the pod sandbox's shim %d ended", rep.Ended, rep.InUse, shim)
			}
			if len(rep.LeftInCluster) != len(tt.wantLeft) {
				t.Fatalf("left in the cluster %+v; want %d things", rep.LeftInCluster, len(tt.wantLeft))
			}
			for i, want := range tt.wantLeft {
				if l := rep.LeftInCluster[i]; !strings.HasPrefix(l.Object, want[0]) || !strings.Contains(l.Reason, want[1]) {
					t.Errorf("left[%d] = %+v; want %s..., because %s", i, l, want[0], want[1])
				}
			}
			if l := rep.LeftInCluster[0]; l.Server != fx.cl.Server {
				t.Errorf("the Node is reported in the cluster at %q, want the one it joined, %s", l.Server, fx.cl.Server)
			}
			if !strings.Contains(errOut, "left in the cluster: Node win-join01") {
				t.Errorf("the error does not say what was left:\n%s", errOut)
			}
			// The Node stays, as reported; a later join needs it gone.
			ctx := context.Background()
			if err := fx.cl.Client.CoreV1().Nodes().Delete(ctx, "win-join01", metav1.DeleteOptions{}); err != nil {
				t.Errorf("the Node reported left is gone: %v", err)
			}
		})
	}
	// With the cluster back, a reset of a node that is no longer joined
	// changes nothing and succeeds.
	fx.write(fx.cl.Kubeconfig, "v1.37.2")
	if code, _, errOut := fx.run("join", "--reset"); code != exitcode.OK {
		t.Fatalf("reset with the cluster: exit %d\n%s", code, errOut)
	}
	if _, err := fx.cl.Client.CoreV1().Nodes().Get(context.Background(), "win-join01", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Node: %v; want none", err)
	}
}
