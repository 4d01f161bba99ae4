package cluster

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
)

// Where the API server address a node uses comes from, in the order
// they are tried.
const (
	EndpointFromOverride    = "spec.kubernetes.join.apiServerEndpoint"
	EndpointFromClusterInfo = "kube-public/cluster-info"
	EndpointFromKubeconfig  = "the kubeconfig's server"
)

// NodeEndpoint is the API server's address as a node reaches it.
type NodeEndpoint struct {
	// Server is its URL, https://host:port.
	Server string `json:"server"`
	// Source says where it comes from (EndpointFrom...).
	Source string `json:"source"`
}

// The ConfigMap kubeadm init creates for joining nodes, and its key.
const (
	clusterInfoName = "cluster-info"
	clusterInfoKey  = "kubeconfig"
)

// ResolveNodeEndpoint decides the API server address the node's kubelet
// and kube-proxy use, and makes the kubeconfigs this Cluster writes for a
// node name it: override (spec.kubernetes.join.apiServerEndpoint) when
// set; else the server of kube-public/cluster-info when the cluster has
// one, as kubeadm join reads it; else the kubeconfig's server.
func (c *Cluster) ResolveNodeEndpoint(ctx context.Context, override string) (NodeEndpoint, error) {
	ep, err := c.nodeEndpoint(ctx, override)
	if err == nil {
		c.NodeServer = ep.Server
	}
	return ep, err
}

func (c *Cluster) nodeEndpoint(ctx context.Context, override string) (NodeEndpoint, error) {
	if override != "" {
		u, err := v1alpha1.APIServerURL(override)
		if err != nil {
			return NodeEndpoint{}, fmt.Errorf("%s %q: %w", EndpointFromOverride, override, err)
		}
		return NodeEndpoint{Server: u, Source: EndpointFromOverride}, nil
	}
	cm, err := c.client.CoreV1().ConfigMaps(metav1.NamespacePublic).Get(ctx, clusterInfoName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		// Not a kubeadm-made cluster (or one that hides it): the
		// kubeconfig's server is all there is.
		return NodeEndpoint{Server: c.Server, Source: EndpointFromKubeconfig}, nil
	case err != nil:
		return NodeEndpoint{}, fmt.Errorf("read %s: %w", EndpointFromClusterInfo, c.explain(err))
	}
	server, err := ClusterInfoServer([]byte(cm.Data[clusterInfoKey]))
	if err != nil {
		return NodeEndpoint{}, fmt.Errorf("%s of the control plane at %s: %w: fix it, or set %s to the address the node reaches the API server at",
			EndpointFromClusterInfo, c.Server, err, EndpointFromOverride)
	}
	return NodeEndpoint{Server: server, Source: EndpointFromClusterInfo}, nil
}

// ClusterInfoServer is the server of the kubeconfig in cluster-info's key
// kubeconfig, as kubeadm join takes it: its current context's cluster,
// else its only (or first, by name) cluster.
func ClusterInfoServer(kubeconfig []byte) (string, error) {
	if len(kubeconfig) == 0 {
		return "", fmt.Errorf("has no key %s", clusterInfoKey)
	}
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return "", fmt.Errorf("its %s is not a kubeconfig: %w", clusterInfoKey, err)
	}
	if kctx, ok := cfg.Contexts[cfg.CurrentContext]; ok {
		if kc, ok := cfg.Clusters[kctx.Cluster]; ok && kc.Server != "" {
			return kc.Server, nil
		}
	}
	names := make([]string, 0, len(cfg.Clusters))
	for name := range cfg.Clusters {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if s := cfg.Clusters[name].Server; s != "" {
			return s, nil
		}
	}
	return "", fmt.Errorf("its %s names no cluster with a server", clusterInfoKey)
}

// nodeServer is the API server URL the kubeconfigs written for a node
// name: the resolved node endpoint, else the kubeconfig's server.
func (c *Cluster) nodeServer() string {
	if c.NodeServer != "" {
		return c.NodeServer
	}
	return c.Server
}
