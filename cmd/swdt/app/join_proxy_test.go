package app

import (
	"bytes"
	"context"
	"os"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
)

// With a kube-proxy provisioner, swdt join registers kube-proxy as a
// service beside the kubelet, with a kubeconfig whose ServiceAccount token
// may do what kube-proxy does (watch Services and EndpointSlices); a second
// join changes nothing; --reset removes the service, its kubeconfig and
// revokes the token.
func TestJoinKubeProxy(t *testing.T) {
	fx := newJoinFixture(t)
	if err := os.WriteFile(fx.dir+"/kube-proxy.exe", []byte("MZ kube-proxy stand-in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(fx.config)
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.Replace(raw, []byte("    join:\n"), []byte(`    - name: kube-proxy
      sourceURL: ./kube-proxy.exe
      destination: C:\k\kube-proxy.exe
      register:
        args: ["--network-name=vxlan0"]
    join:
`), 1)
	if err := os.WriteFile(fx.config, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	code, doc, errOut := fx.run("join")
	if code != exitcode.OK || doc.Nodes[0].Result != "changed" || !slices.Contains(doc.Nodes[0].FilesChanged, ops.JoinFileKubeProxyKubeconfig) {
		t.Fatalf("join: exit %d, %+v\n%s", code, doc, errOut)
	}
	svc := fx.ts.State().Services["kube-proxy"]
	want := []string{"--windows-service", "--kubeconfig=" + ops.JoinKubeProxyKubeconfig, "--hostname-override=win-join01", "--proxy-mode=kernelspace", "--network-name=vxlan0"}
	if svc == nil || svc.Status != "Running" || svc.BinaryPath != `C:\k\kube-proxy.exe` || !slices.Equal(svc.Args, want) || !slices.Equal(svc.Dependencies, []string{"kubelet"}) {
		t.Fatalf("kube-proxy service = %+v", svc)
	}
	kc, err := fx.ts.Node().ReadFile(ops.JoinKubeProxyKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proxy.DiscoveryV1().EndpointSlices("").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("kube-proxy's token cannot list EndpointSlices: %v", err)
	}
	if _, err := proxy.CoreV1().Secrets("kube-system").List(context.Background(), metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("kube-proxy's token may list Secrets: %v", err)
	}

	starts := svc.StartCount
	if code, doc, errOut := fx.run("join"); code != exitcode.OK || doc.Nodes[0].Result != "unchanged" {
		t.Fatalf("second join: exit %d, %+v\n%s", code, doc, errOut)
	}
	if fx.ts.State().Services["kube-proxy"].StartCount != starts {
		t.Error("the second join restarted kube-proxy")
	}

	if code, doc, errOut := fx.run("join", "--reset"); code != exitcode.OK || !slices.Contains(doc.Nodes[0].Removed, "kube-proxy's token") {
		t.Fatalf("reset: exit %d, %+v\n%s", code, doc, errOut)
	}
	if fx.ts.State().Services["kube-proxy"] != nil || fx.ts.Node().Exists(ops.JoinKubeProxyKubeconfig) || fx.ts.Node().Exists(`C:\k\kube-proxy.exe`) {
		t.Error("kube-proxy's service, kubeconfig or binary is still there after --reset")
	}
	if _, err := fx.cl.Client.CoreV1().Secrets("kube-system").Get(context.Background(), cluster.KubeProxyServiceAccount+"-win-join01", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("kube-proxy's token Secret after --reset: %v", err)
	}
	// The API server sees the deletion through its cache of Secrets.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		_, err := proxy.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})
		if apierrors.IsUnauthorized(err) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("kube-proxy's token still works after --reset: %v", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
