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
		{name: "apiServerEndpoint host:port", mutate: func(_ *Node, j *JoinSpec) { j.APIServerEndpoint = "192.168.122.1:6443" }},
		{name: "apiServerEndpoint URL", mutate: func(_ *Node, j *JoinSpec) { j.APIServerEndpoint = "https://cp.example.com:6443" }},
		{name: "apiServerEndpoint without port", mutate: func(_ *Node, j *JoinSpec) { j.APIServerEndpoint = "192.168.122.1" },
			want: []string{"FieldValueInvalid spec.kubernetes.join.apiServerEndpoint"}},
		{name: "apiServerEndpoint http", mutate: func(_ *Node, j *JoinSpec) { j.APIServerEndpoint = "http://192.168.122.1:6443" },
			want: []string{"FieldValueInvalid spec.kubernetes.join.apiServerEndpoint"}},
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
		{name: "cluster DNS and domain", mutate: func(_ *Node, j *JoinSpec) {
			j.ClusterDNS, j.ClusterDomain = []string{"10.96.0.10", "fd00:10:96::a"}, "corp.example"
		}},
		{name: "cluster DNS not an IP", mutate: func(_ *Node, j *JoinSpec) { j.ClusterDNS = []string{"10.96.0.10", "kube-dns"} },
			want: []string{"FieldValueInvalid spec.kubernetes.join.clusterDNS[1]"}},
		{name: "cluster domain not a DNS name", mutate: func(_ *Node, j *JoinSpec) { j.ClusterDomain = "Cluster_Local." },
			want: []string{"FieldValueInvalid spec.kubernetes.join.clusterDomain"}},
		{name: "kube-log-runner with the kubelet", mutate: func(n *Node, _ *JoinSpec) {
			n.Spec.Kubernetes.Provisioners = append(n.Spec.Kubernetes.Provisioners,
				ProvisionerSpec{Name: "kube-log-runner", Service: "kubelet", SourceURL: "release:kubernetes", Destination: `C:\k\kube-log-runner.exe`})
		}},
		{name: "kube-log-runner as a file of no service", mutate: func(n *Node, _ *JoinSpec) {
			n.Spec.Kubernetes.Provisioners = append(n.Spec.Kubernetes.Provisioners,
				ProvisionerSpec{Name: "log-runner", Service: "None", SourceURL: "release:kubernetes", Destination: `C:\k\KUBE-LOG-RUNNER.EXE`})
		}, want: []string{"FieldValueInvalid spec.kubernetes.provisioners[3].service"}},
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

// A release:KIND source names a known release and a version; only a
// join defaults the Kubernetes version (to the control plane's).
func TestValidateRelease(t *testing.T) {
	tests := []struct {
		name    string
		source  string
		version string
		join    bool
		want    []string
	}{
		{name: "kubelet of a version", source: "release:kubernetes", version: "v1.37.2"},
		{name: "kubelet of the control plane's version", source: "release:kubernetes", join: true},
		{name: "kubelet without a version and without a join", source: "release:kubernetes",
			want: []string{"FieldValueRequired spec.kubernetes.provisioners[1].version"}},
		{name: "containerd, any case", source: "Release:Containerd", version: "2.1.4", join: true},
		{name: "containerd without a version", source: "release:containerd", join: true,
			want: []string{"FieldValueRequired spec.kubernetes.provisioners[1].version"}},
		{name: "cni with a version that is no release's", source: "release:cni", version: "1.6/../x",
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].version"}},
		{name: "an unknown release", source: "release:docker", version: "1.0.0",
			want: []string{"FieldValueNotSupported spec.kubernetes.provisioners[1].sourceURL"}},
		{name: "a local archive", source: "./containerd-2.1.4-windows-amd64.tar.gz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := validNode()
			p := &n.Spec.Kubernetes.Provisioners[1]
			p.SourceURL, p.Version = tt.source, tt.version
			if tt.join {
				n.Spec.Kubernetes.Join = &JoinSpec{}
			}
			got := summarize(ValidateNode(n))
			if !slices.Equal(got, tt.want) {
				t.Errorf("ValidateNode() = %q, want %q", got, tt.want)
			}
		})
	}
}
