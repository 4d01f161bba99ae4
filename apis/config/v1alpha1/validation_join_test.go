package v1alpha1

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateJoin(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(n *Node, j *JoinSpec)
		want   []string
	}{
		{name: "valid", mutate: func(*Node, *JoinSpec) {}},
		{name: "no kubelet provisioner", mutate: func(n *Node, _ *JoinSpec) {
			n.Spec.Kubernetes.Provisioners = n.Spec.Kubernetes.Provisioners[:1]
		}, want: []string{"FieldValueRequired spec.kubernetes.provisioners"}},
		{name: "kubelet by service name", mutate: func(n *Node, _ *JoinSpec) {
			p := &n.Spec.Kubernetes.Provisioners[1]
			p.Name, p.Service = "my-kubelet", "kubelet"
		}},
		{name: "node name not a DNS subdomain", mutate: func(_ *Node, j *JoinSpec) { j.NodeName = "WIN_01" },
			want: []string{"FieldValueInvalid spec.kubernetes.join.nodeName"}},
		{name: "bad label key and value", mutate: func(_ *Node, j *JoinSpec) {
			j.Labels = map[string]string{"a b": "ok", "ok": "x y"}
		}, want: []string{"FieldValueInvalid spec.kubernetes.join.labels[a b]", "FieldValueInvalid spec.kubernetes.join.labels[ok]"}},
		{name: "taints", mutate: func(_ *Node, j *JoinSpec) {
			j.Taints = []string{"os=windows:NoSchedule", "gpu:NoExecute", "novalue", "k=v:Sometimes"}
		}, want: []string{"FieldValueInvalid spec.kubernetes.join.taints[2]", "FieldValueInvalid spec.kubernetes.join.taints[3]"}},
		{name: "timeout", mutate: func(_ *Node, j *JoinSpec) { j.Timeout = &metav1.Duration{Duration: -time.Second} },
			want: []string{"FieldValueInvalid spec.kubernetes.join.timeout"}},
		{name: "criSocket pipe", mutate: func(_ *Node, j *JoinSpec) { j.CRISocket = "npipe:////./pipe/containerd-containerd" }},
		{name: "criSocket tcp", mutate: func(_ *Node, j *JoinSpec) { j.CRISocket = "tcp://127.0.0.1:3735" }},
		{name: "criSocket unix", mutate: func(_ *Node, j *JoinSpec) { j.CRISocket = "unix:///run/containerd/containerd.sock" },
			want: []string{"FieldValueInvalid spec.kubernetes.join.criSocket"}},
		{name: "criSocket without port", mutate: func(_ *Node, j *JoinSpec) { j.CRISocket = "tcp://10.0.0.5" },
			want: []string{"FieldValueInvalid spec.kubernetes.join.criSocket"}},
		{name: "criSocket empty pipe", mutate: func(_ *Node, j *JoinSpec) { j.CRISocket = "npipe:////./pipe/" },
			want: []string{"FieldValueInvalid spec.kubernetes.join.criSocket"}},
		{name: "control characters", mutate: func(_ *Node, j *JoinSpec) { j.Kubeconfig, j.Context = "a\x1b", "b\n" },
			want: []string{"FieldValueInvalid spec.kubernetes.join.kubeconfig", "FieldValueInvalid spec.kubernetes.join.context"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := validNode()
			n.Spec.Kubernetes.Join = &JoinSpec{Kubeconfig: "/home/dev/.kube/config"}
			tt.mutate(n, n.Spec.Kubernetes.Join)
			got := summarize(ValidateNode(n))
			slices.Sort(got)
			want := slices.Clone(tt.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("ValidateNode() = %q, want %q", got, want)
			}
		})
	}
}
