package rollout

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/kubeconn"
	"sigs.k8s.io/swdt/pkg/node"
)

// SSHConnector reaches each Node over SSH with the node file's
// credentials, on the address the cluster reports for it (its
// InternalIP, else its Hostname address), on the port of the file's
// credentials.hostname when it sets one (its host part is not used),
// else 22 or what ~/.ssh/config says for the address. KubeConnector
// needs no SSH.
func SSHConnector(c *cluster.Cluster, spec *v1alpha1.Node, opts node.ConnectOptions) Connector {
	return ConnectFunc(func(ctx context.Context, name string, warn func(string)) (*node.Node, error) {
		n, err := c.Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("read Node %s's address: %w", name, err)
		}
		addr := nodeAddress(n)
		if addr == "" {
			return nil, fmt.Errorf("Node %s reports no InternalIP or Hostname address to reach it over SSH", name)
		}
		if creds := spec.Spec.Credentials; creds.Hostname != "" {
			// The file's hostname gives the port: Nodes' sshd listen alike.
			_, port := creds.HostPort()
			addr = net.JoinHostPort(addr, strconv.Itoa(port))
		}
		one := *spec
		one.Name = name
		o := opts
		o.Warn = warn
		return node.Dial(ctx, one, addr, o)
	})
}

// KubeConnector reaches each Node through the Kubernetes API
// (pkg/kubeconn): a HostProcess pod pinned to it in the Namespace, and
// pods/exec; opts give the kubeconfig, its context, the pod's image and
// its timeout (Node and Namespace are set here). No SSH credentials are
// used and no SSH connection is opened. logger receives the node API's
// ops at debug level (nil discards).
func KubeConnector(opts kubeconn.Options, logger *slog.Logger) Connector {
	opts.Namespace = Namespace
	return ConnectFunc(func(ctx context.Context, name string, _ func(string)) (*node.Node, error) {
		o := opts
		o.Node = name
		conn, err := kubeconn.Dial(ctx, o)
		if err != nil {
			return nil, err
		}
		return node.New(name, conn, logger), nil
	})
}

// KubeRights are the rights KubeConnector needs (Options.Access), so that
// the rollout checks them with its own before any Node is touched.
func KubeRights() []Right { return kubeconn.Rights(Namespace) }

// nodeAddress is the Node's InternalIP, else its Hostname address.
func nodeAddress(n *corev1.Node) string {
	for _, want := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeHostName} {
		for _, a := range n.Status.Addresses {
			if a.Type == want && a.Address != "" {
				return a.Address
			}
		}
	}
	return ""
}
