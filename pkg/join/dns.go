package join

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
)

// kubeletDNS is the cluster DNS a join writes into the kubelet's
// configuration: the node file's clusterDNS and clusterDomain, each
// else what the cluster says (kubeadm's kubelet-config ConfigMap, else
// the kube-dns Service), and cluster.local for a domain nobody names.
// Nothing is read from a cluster (found is nil) when the node file
// names both.
func kubeletDNS(ctx context.Context, js *v1alpha1.JoinSpec, found func(context.Context) (cluster.DNS, error)) (cluster.DNS, error) {
	dns := cluster.DNS{Servers: js.ClusterDNS, Domain: js.ClusterDomain}
	if len(dns.Servers) > 0 {
		dns.Source = "spec.kubernetes.join.clusterDNS"
	}
	if len(dns.Servers) == 0 || dns.Domain == "" {
		c, err := found(ctx)
		if err != nil {
			return dns, fmt.Errorf("read the cluster's DNS settings: %w; set spec.kubernetes.join.clusterDNS and clusterDomain to go without; nothing was changed", err)
		}
		if len(dns.Servers) == 0 {
			dns.Servers, dns.Source = c.Servers, c.Source
		}
		if dns.Domain == "" {
			dns.Domain = c.Domain
		}
	}
	if dns.Domain == "" {
		dns.Domain = cluster.DefaultClusterDomain
	}
	return dns, nil
}

// dnsStep says what a join writes of the cluster's DNS, or, when it
// found no DNS server, warns that pods cannot resolve cluster names.
func (j *joiner) dnsStep(dns cluster.DNS) {
	if len(dns.Servers) == 0 {
		j.opts.Observer.Warn(fmt.Sprintf("node %s: the cluster has no kube-system/kubelet-config ConfigMap naming clusterDNS and no kube-system/kube-dns Service: "+
			"the kubelet gets no cluster DNS, so pods on the node cannot resolve cluster names; deploy CoreDNS, or set spec.kubernetes.join.clusterDNS", j.spec.Name))
		return
	}
	j.step(fmt.Sprintf("cluster DNS %s (from %s), domain %s", strings.Join(dns.Servers, ", "), dns.Source, dns.Domain))
}
