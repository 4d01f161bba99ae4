package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Where kubeadm keeps the cluster's DNS settings for its nodes: `kubeadm
// init` uploads the KubeletConfiguration every node shares to this
// ConfigMap (key kubelet), and `kubeadm join` takes the node's clusterDNS
// and clusterDomain from it. Without it, the cluster's DNS is the
// kube-dns Service (CoreDNS keeps that name in kubeadm, kind, minikube
// and k3s).
const (
	KubeletConfigMap    = "kubelet-config"
	KubeletConfigMapKey = "kubelet"
	KubeDNSService      = "kube-dns"
)

// DefaultClusterDomain is the cluster domain when the cluster names none
// (kubeadm's default).
const DefaultClusterDomain = "cluster.local"

// DNS is the cluster's DNS as a node's kubelet must know it.
type DNS struct {
	// Servers are the DNS Service's IPs (clusterDNS); empty when the
	// cluster has none that swdt could find.
	Servers []string
	// Domain is the cluster domain ("" when the cluster does not say).
	Domain string
	// Source says where Servers came from, for the user:
	// kube-system/kubelet-config or kube-system/kube-dns ("" when empty).
	Source string
}

// DNS reads the cluster's DNS as `kubeadm join` does: clusterDNS and
// clusterDomain from the kube-system/kubelet-config ConfigMap; when that
// is missing or names no DNS server, the clusterIP of the
// kube-system/kube-dns Service. A ConfigMap or Service that is missing,
// or that the user may not read, is no error: the result is then
// incomplete, and the caller says so.
func (c *Cluster) DNS(ctx context.Context) (DNS, error) {
	var dns DNS
	cm, err := c.client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, KubeletConfigMap, metav1.GetOptions{})
	switch {
	case absent(err):
	case err != nil:
		return dns, c.explain(fmt.Errorf("read ConfigMap %s/%s: %w", metav1.NamespaceSystem, KubeletConfigMap, err))
	default:
		if dns, err = dnsOfKubeletConfig(cm); err != nil {
			return dns, err
		}
	}
	if len(dns.Servers) > 0 {
		return dns, nil
	}
	svc, err := c.client.CoreV1().Services(metav1.NamespaceSystem).Get(ctx, KubeDNSService, metav1.GetOptions{})
	switch {
	case absent(err):
	case err != nil:
		return dns, c.explain(fmt.Errorf("read Service %s/%s: %w", metav1.NamespaceSystem, KubeDNSService, err))
	default:
		dns.Servers, dns.Source = serviceIPs(svc), metav1.NamespaceSystem+"/"+KubeDNSService
		if len(dns.Servers) == 0 {
			dns.Source = ""
		}
	}
	return dns, nil
}

// absent reports whether err says an object is not there for this user.
func absent(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsForbidden(err)
}

// dnsOfKubeletConfig reads clusterDNS and clusterDomain from kubeadm's
// kubelet-config ConfigMap.
func dnsOfKubeletConfig(cm *corev1.ConfigMap) (DNS, error) {
	raw, ok := cm.Data[KubeletConfigMapKey]
	if !ok {
		return DNS{}, nil
	}
	var kc struct {
		ClusterDNS    []string `json:"clusterDNS"`
		ClusterDomain string   `json:"clusterDomain"`
	}
	if err := yaml.Unmarshal([]byte(raw), &kc); err != nil {
		return DNS{}, fmt.Errorf("ConfigMap %s/%s: key %s is no KubeletConfiguration (%w): set spec.kubernetes.join.clusterDNS and clusterDomain instead",
			cm.Namespace, cm.Name, KubeletConfigMapKey, err)
	}
	dns := DNS{Servers: kc.ClusterDNS, Domain: kc.ClusterDomain}
	if len(dns.Servers) > 0 {
		dns.Source = cm.Namespace + "/" + cm.Name
	}
	return dns, nil
}

// serviceIPs are a Service's cluster IPs; none for a headless one.
func serviceIPs(svc *corev1.Service) []string {
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []string
	for _, ip := range ips {
		if ip != corev1.ClusterIPNone {
			out = append(out, ip)
		}
	}
	return out
}
