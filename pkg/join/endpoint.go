package join

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/ops"
)

// probeEndpoint checks, from the node, the API server address its kubelet
// will use (TCP, then TLS against the cluster CA for that name), before
// the join creates a token or writes a file.
func (j *joiner) probeEndpoint(ctx context.Context, n Node, ep cluster.NodeEndpoint, ca []byte) error {
	j.step(fmt.Sprintf("checking that the node reaches the API server at %s (%s)", ep.Server, ep.Source))
	_, err := n.ProbeAPIServer(ctx, ops.APIServerProbeRequest{Server: ep.Server, CA: string(ca)})
	if err != nil {
		return probeRefusal(ep, err)
	}
	return nil
}

// probeRefusal is the error of a join whose node cannot use the API
// server at ep: the address, why, what to change, and that nothing was.
func probeRefusal(ep cluster.NodeEndpoint, err error) error {
	host := ep.Server
	if u, perr := url.Parse(ep.Server); perr == nil {
		host = u.Hostname()
	}
	var why, fix string
	address := "set " + cluster.EndpointFromOverride + " to an address of the API server the node reaches (host:port); " + kindFix
	switch ops.KindOf(err) {
	case ops.KindConnectionRefused:
		why, fix = "connection refused (nothing listens there)", address
	case ops.KindUnreachable:
		why, fix = "unreachable (no route to it, or the node cannot resolve its name)", address
	case ops.KindTimeout:
		why, fix = "no answer in time (a firewall between them, or an address of another network)", address
	case ops.KindCertificateName:
		why = "TLS: the API server's certificate is not valid for " + host
		fix = "add " + host + " to the API server certificate's SANs (kubeadm: apiServer.certSANs; kind adds networking.apiServerAddress), or set " +
			cluster.EndpointFromOverride + " to a name or address the certificate holds"
	case ops.KindUnknownAuthority:
		why = "TLS: the certificate there is not signed by the cluster's CA (another server, or another cluster's)"
		fix = "set " + cluster.EndpointFromOverride + " to this cluster's API server as the node reaches it"
	case ops.KindTLS:
		why, fix = "the TLS handshake failed", "check that "+ep.Server+" is this cluster's API server, or set "+cluster.EndpointFromOverride
	default:
		return fmt.Errorf("check the node's way to the API server at %s: %w; nothing was changed", ep.Server, err)
	}
	if isLoopback(host) {
		why += "; " + host + " is the node's own loopback, not the machine the API server runs on"
	}
	return fmt.Errorf("the node cannot reach the API server at %s (%s): %s. Fix: %s; nothing was changed (%w)", ep.Server, ep.Source, why, fix, err)
}

// kindFix is what a kind user changes: kind publishes the API server on
// the laptop's loopback unless told otherwise, and its cluster-info
// names its container, which only docker's network reaches.
const kindFix = "with kind, first set networking.apiServerAddress (and apiServerPort) in the kind config to an address of this machine " +
	"that the VM reaches (kind adds it to the certificate) and recreate the cluster"

// isLoopback reports whether host names a loopback address: 127.0.0.0/8,
// ::1 or localhost.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// joinedHere reports whether joined, the server a node's kubelet.conf
// names, is the cluster c: its kubeconfig's server, or its address as the
// node reaches it (override, spec.kubernetes.join.apiServerEndpoint; else
// cluster-info's, read only when the cluster is reachable).
func joinedHere(ctx context.Context, c *cluster.Cluster, override, joined string, reachable bool) bool {
	switch {
	case joined == "":
		return false
	case joined == c.Server:
		return true
	case override != "":
		u, err := v1alpha1.APIServerURL(override)
		return err == nil && u == joined
	case reachable:
		ep, err := c.ResolveNodeEndpoint(ctx, "")
		return err == nil && ep.Server == joined
	}
	return false
}
