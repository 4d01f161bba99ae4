package app

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
)

// The kubelet's clusterDNS and clusterDomain come from where kubeadm join
// takes them: kubeadm's kube-system/kubelet-config ConfigMap, else the
// kube-dns Service; without either the join warns and goes on.
func TestJoinClusterDNS(t *testing.T) {
	fx := newJoinFixture(t)
	ctx := context.Background()
	steps := []struct {
		name        string
		before      func(t *testing.T) // changes the cluster before the join
		wantDNS     func() []string
		wantDomain  string
		wantWarning bool
	}{
		{name: "neither ConfigMap nor Service: a warning", before: func(*testing.T) {},
			wantDNS: func() []string { return nil }, wantDomain: "cluster.local", wantWarning: true},
		{name: "the kube-dns Service", before: func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
				Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}}}
			if _, err := fx.cl.Client.CoreV1().Services("kube-system").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, wantDNS: func() []string { return []string{"10.96.0.10"} }, wantDomain: "cluster.local"},
		{name: "kubeadm's kubelet-config ConfigMap wins", before: func(t *testing.T) {
			// What `kubeadm init` uploads (abridged to what a join reads).
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kubelet-config"},
				Data: map[string]string{"kubelet": "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n" +
					"cgroupDriver: systemd\nclusterDNS:\n- 10.96.0.53\nclusterDomain: corp.internal\n"}}
			if _, err := fx.cl.Client.CoreV1().ConfigMaps("kube-system").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, wantDNS: func() []string { return []string{"10.96.0.53"} }, wantDomain: "corp.internal"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			st.before(t)
			code, doc, errOut := fx.run("join")
			if code != exitcode.OK || len(doc.Nodes) != 1 || !doc.Nodes[0].Node.Registered {
				t.Fatalf("join: exit %d\n%s", code, errOut)
			}
			raw, err := fx.ts.Node().ReadFile(ops.JoinKubeletConfig)
			if err != nil {
				t.Fatal(err)
			}
			var kc kubeletv1beta1.KubeletConfiguration
			if err := yaml.UnmarshalStrict(raw, &kc); err != nil {
				t.Fatalf("%s: %v", ops.JoinKubeletConfig, err)
			}
			if !slices.Equal(kc.ClusterDNS, st.wantDNS()) || kc.ClusterDomain != st.wantDomain {
				t.Errorf("clusterDNS %v, clusterDomain %q; want %v, %q\n%s", kc.ClusterDNS, kc.ClusterDomain, st.wantDNS(), st.wantDomain, raw)
			}
			if warned := strings.Contains(errOut, "pods on the node cannot resolve cluster names"); warned != st.wantWarning {
				t.Errorf("warned = %v, want %v:\n%s", warned, st.wantWarning, errOut)
			}
		})
	}
}
