package cluster

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// kubeadm's cluster-info: one unnamed cluster, no context.
const clusterInfoKubeconfig = `apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: Y2E=
    server: https://10.0.0.2:6443
  name: ""
contexts: null
users: null
current-context: ""
`

func TestResolveNodeEndpoint(t *testing.T) {
	clusterInfo := func(kubeconfig string) runtime.Object {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-info", Namespace: "kube-public"},
			Data: map[string]string{"kubeconfig": kubeconfig}}
	}
	for _, tc := range []struct {
		name     string
		override string
		objects  []runtime.Object
		want     NodeEndpoint
		err      string
	}{
		{name: "kubeconfig's server without cluster-info",
			want: NodeEndpoint{Server: "https://127.0.0.1:6443", Source: EndpointFromKubeconfig}},
		{name: "cluster-info's server", objects: []runtime.Object{clusterInfo(clusterInfoKubeconfig)},
			want: NodeEndpoint{Server: "https://10.0.0.2:6443", Source: EndpointFromClusterInfo}},
		{name: "the override wins over cluster-info", override: "192.168.122.1:6443", objects: []runtime.Object{clusterInfo(clusterInfoKubeconfig)},
			want: NodeEndpoint{Server: "https://192.168.122.1:6443", Source: EndpointFromOverride}},
		{name: "the override as a URL", override: "https://cp.example.com:6443",
			want: NodeEndpoint{Server: "https://cp.example.com:6443", Source: EndpointFromOverride}},
		{name: "a bad override", override: "cp.example.com", err: "has no port"},
		{name: "cluster-info without its key", objects: []runtime.Object{clusterInfo("")},
			err: "kube-public/cluster-info of the control plane at https://127.0.0.1:6443: has no key kubeconfig"},
		{name: "cluster-info naming no server", objects: []runtime.Object{clusterInfo("apiVersion: v1\nkind: Config\n")},
			err: "names no cluster with a server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Cluster{Server: "https://127.0.0.1:6443", Context: "kind-dev", client: fake.NewSimpleClientset(tc.objects...)}
			got, err := c.ResolveNodeEndpoint(context.Background(), tc.override)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ResolveNodeEndpoint = %+v, %v; want an error saying %q", got, err, tc.err)
				}
				return
			case err != nil || got != tc.want:
				t.Fatalf("ResolveNodeEndpoint = %+v, %v; want %+v", got, err, tc.want)
			}
			raw, err := c.BootstrapKubeconfig(Token{ID: "abcdef", Value: "abcdef.0123456789abcdef"})
			if err != nil {
				t.Fatal(err)
			}
			if server, err := ServerOf(raw); err != nil || server != tc.want.Server {
				t.Errorf("the bootstrap kubeconfig names %q (%v), want %q", server, err, tc.want.Server)
			}
		})
	}
}

func TestClusterInfoServer(t *testing.T) {
	for _, tc := range []struct {
		name, kubeconfig, want string
	}{
		{"kubeadm's unnamed cluster", clusterInfoKubeconfig, "https://10.0.0.2:6443"},
		{"the current context's cluster", `apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://a:6443"}}
- {name: b, cluster: {server: "https://b:6443"}}
contexts:
- {name: ctx, context: {cluster: b}}
current-context: ctx
`, "https://b:6443"},
		{"the first cluster by name", `apiVersion: v1
kind: Config
clusters:
- {name: z, cluster: {server: "https://z:6443"}}
- {name: a, cluster: {server: "https://a:6443"}}
`, "https://a:6443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ClusterInfoServer([]byte(tc.kubeconfig))
			if err != nil || got != tc.want {
				t.Fatalf("ClusterInfoServer = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
