package cluster

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// kubeletConfigMap is what `kubeadm init` uploads (abridged).
func kubeletConfigMap(kubelet string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kubelet-config"},
		Data: map[string]string{"kubelet": kubelet}}
}

func kubeDNS(ips ...string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
		Spec: corev1.ServiceSpec{ClusterIP: ips[0], ClusterIPs: ips}}
}

func TestDNS(t *testing.T) {
	const kubeadmKubelet = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nclusterDNS:\n- 10.96.0.10\nclusterDomain: corp.local\ncgroupDriver: systemd\n"
	tests := []struct {
		name    string
		objects []runtime.Object
		deny    string // a resource the user may not read
		fail    string // a resource whose read fails
		want    DNS
		wantErr string
	}{
		{name: "kubeadm's ConfigMap", objects: []runtime.Object{kubeletConfigMap(kubeadmKubelet), kubeDNS("10.96.0.99")},
			want: DNS{Servers: []string{"10.96.0.10"}, Domain: "corp.local", Source: "kube-system/kubelet-config"}},
		{name: "no ConfigMap: the kube-dns Service, dual-stack", objects: []runtime.Object{kubeDNS("10.43.0.10", "fd00:43::a")},
			want: DNS{Servers: []string{"10.43.0.10", "fd00:43::a"}, Source: "kube-system/kube-dns"}},
		{name: "ConfigMap without clusterDNS keeps its domain", objects: []runtime.Object{kubeletConfigMap("kind: KubeletConfiguration\nclusterDomain: k.test\n"), kubeDNS("10.0.0.10")},
			want: DNS{Servers: []string{"10.0.0.10"}, Domain: "k.test", Source: "kube-system/kube-dns"}},
		{name: "ConfigMap without the kubelet key", objects: []runtime.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kubelet-config"}}},
			want: DNS{}},
		{name: "headless kube-dns", objects: []runtime.Object{kubeDNS("None")}, want: DNS{}},
		{name: "neither", want: DNS{}},
		{name: "ConfigMap forbidden", objects: []runtime.Object{kubeletConfigMap(kubeadmKubelet), kubeDNS("10.96.0.10")}, deny: "configmaps",
			want: DNS{Servers: []string{"10.96.0.10"}, Source: "kube-system/kube-dns"}},
		{name: "not a KubeletConfiguration", objects: []runtime.Object{kubeletConfigMap("clusterDNS: 10.96.0.10\n")},
			wantErr: "ConfigMap kube-system/kubelet-config: key kubelet is no KubeletConfiguration"},
		{name: "the read fails", objects: []runtime.Object{kubeDNS("10.96.0.10")}, fail: "services",
			wantErr: "read Service kube-system/kube-dns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.objects...)
			react := func(resource string, err error) {
				client.PrependReactor("get", resource, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
			}
			if tt.deny != "" {
				react(tt.deny, apierrors.NewForbidden(schema.GroupResource{Resource: tt.deny}, "x", errors.New("RBAC")))
			}
			if tt.fail != "" {
				react(tt.fail, apierrors.NewInternalError(errors.New("etcd timeout")))
			}
			c := &Cluster{Server: "https://cp:6443", Context: "dev", client: client}
			got, err := c.DNS(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DNS() error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DNS(): %v", err)
			}
			if !slices.Equal(got.Servers, tt.want.Servers) || got.Domain != tt.want.Domain || got.Source != tt.want.Source {
				t.Errorf("DNS() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
