package join

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
)

func TestKubeletDNS(t *testing.T) {
	kubeadm := cluster.DNS{Servers: []string{"10.96.0.10"}, Domain: "corp.local", Source: "kube-system/kubelet-config"}
	tests := []struct {
		name     string
		js       v1alpha1.JoinSpec
		found    cluster.DNS
		foundErr error
		want     cluster.DNS
		wantRead bool
		wantErr  string
	}{
		{name: "the cluster's", found: kubeadm, want: kubeadm, wantRead: true},
		{name: "kube-dns without a domain: cluster.local", found: cluster.DNS{Servers: []string{"10.43.0.10"}, Source: "kube-system/kube-dns"},
			want: cluster.DNS{Servers: []string{"10.43.0.10"}, Domain: "cluster.local", Source: "kube-system/kube-dns"}, wantRead: true},
		{name: "the node file's servers, the cluster's domain", js: v1alpha1.JoinSpec{ClusterDNS: []string{"10.0.0.53"}}, found: kubeadm,
			want: cluster.DNS{Servers: []string{"10.0.0.53"}, Domain: "corp.local", Source: "spec.kubernetes.join.clusterDNS"}, wantRead: true},
		{name: "the node file's domain, the cluster's servers", js: v1alpha1.JoinSpec{ClusterDomain: "k.test"}, found: kubeadm,
			want: cluster.DNS{Servers: []string{"10.96.0.10"}, Domain: "k.test", Source: "kube-system/kubelet-config"}, wantRead: true},
		{name: "both in the node file: nothing read", js: v1alpha1.JoinSpec{ClusterDNS: []string{"10.0.0.53"}, ClusterDomain: "k.test"},
			foundErr: errors.New("must not be read"),
			want:     cluster.DNS{Servers: []string{"10.0.0.53"}, Domain: "k.test", Source: "spec.kubernetes.join.clusterDNS"}},
		{name: "none anywhere", want: cluster.DNS{Domain: "cluster.local"}, wantRead: true},
		{name: "the read fails", foundErr: errors.New("connection refused"), wantRead: true,
			wantErr: "read the cluster's DNS settings: connection refused; set spec.kubernetes.join.clusterDNS and clusterDomain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := false
			got, err := kubeletDNS(context.Background(), &tt.js, func(context.Context) (cluster.DNS, error) {
				read = true
				return tt.found, tt.foundErr
			})
			if read != tt.wantRead {
				t.Errorf("cluster read = %v, want %v", read, tt.wantRead)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Servers, tt.want.Servers) || got.Domain != tt.want.Domain || got.Source != tt.want.Source {
				t.Errorf("kubeletDNS() = %+v, want %+v", got, tt.want)
			}
		})
	}
}
