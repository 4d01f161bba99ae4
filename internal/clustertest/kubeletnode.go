package clustertest

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// Paths of the kubelet StartKubeletNode installs.
const (
	KubeletPath           = `C:\k\kubelet.exe`
	KubeletKubeconfigPath = `C:\etc\kubernetes\kubelet.conf`
)

// StartKubeletNode runs a bare simnode in this process, joined to the
// cluster as Node name: its kubelet service (simnode's simulated kubelet,
// with the Node's client certificate) registers the Node, renews its
// Lease, runs the HostProcess pods bound to it and serves exec into them
// on a port of 127.0.0.1, its InternalIP, which the API server reaches.
// It returns once the Node reports that port. opts add to the simnode's
// options.
func (c *Cluster) StartKubeletNode(t testing.TB, name string, opts ...simnode.TestOption) *simnode.TestServer {
	t.Helper()
	ts := simnode.StartTest(t, append([]simnode.TestOption{simnode.WithOptions(func(o *simnode.Options) {
		o.Bare, o.Hostname = true, strings.ToUpper(name)
	})}, opts...)...)
	creds, err := c.NodeKubeconfig(name)
	if err != nil {
		t.Fatal(err)
	}
	n := ts.Node()
	for _, step := range []func() error{
		func() error { return n.MkdirAll(`C:\k`) },
		func() error { return n.WriteFile(KubeletPath, simnode.KubeletBinary(Version)) },
		func() error { return n.MkdirAll(`C:\etc\kubernetes`) },
		func() error { return n.WriteFile(KubeletKubeconfigPath, creds) },
		func() error {
			return n.CreateService(simnode.ServiceConfig{Name: "kubelet", BinaryPath: KubeletPath, StartType: simnode.StartAutomatic,
				Args: []string{"--windows-service", "--kubeconfig=" + KubeletKubeconfigPath, "--hostname-override=" + name}})
		},
		func() error { return n.StartService("kubelet") },
	} {
		if err := step(); err != nil {
			t.Fatalf("install the kubelet of node %s: %v", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = retry.Poll(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		nd, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		return err == nil && nd.Status.DaemonEndpoints.KubeletEndpoint.Port != 0, nil
	})
	if err != nil {
		t.Fatalf("Node %s did not report its kubelet port: %v", name, err)
	}
	return ts
}
