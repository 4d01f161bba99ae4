package status

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/ops"
)

// Only a node with a join section asks the cluster, for its kubelet; a
// cluster that cannot be read is said beside the kubelet, not as the
// node's failure. (The Node read from a real control plane is tested in
// cmd/swdt/app's cluster tier.)
func TestClusterNode(t *testing.T) {
	raw, err := os.ReadFile("../cluster/testdata/one.kubeconfig")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := filepath.Join(t.TempDir(), "unreachable.kubeconfig")
	if err := os.WriteFile(unreachable, bytes.Replace(raw, []byte("127.0.0.1:6443"), []byte("127.0.0.1:1"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	kubelet := v1alpha1.ProvisionerSpec{Name: "kubelet", Destination: `C:\k\kubelet.exe`}
	tests := []struct {
		name    string
		join    *v1alpha1.JoinSpec
		wantErr string
	}{
		{name: "no join section"},
		{name: "no kubeconfig", join: &v1alpha1.JoinSpec{Kubeconfig: "testdata/none.kubeconfig"}, wantErr: "read kubeconfig testdata/none.kubeconfig"},
		{name: "control plane down", join: &v1alpha1.JoinSpec{Kubeconfig: unreachable}, wantErr: "cannot reach the control plane at https://127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &v1alpha1.Node{Spec: v1alpha1.NodeSpec{Kubernetes: v1alpha1.KubernetesSpec{Provisioners: []v1alpha1.ProvisionerSpec{kubelet}, Join: tt.join}}}
			report := &Report{Node: ops.NodeFactsResponse{Hostname: "WIN-01"}, Binaries: []Binary{{Name: "kubelet"}, {Name: "kube-proxy"}}}
			ClusterNode(context.Background(), spec, report)
			got := report.Binaries[0]
			if got.Node != nil || !strings.Contains(got.NodeError, tt.wantErr) || (tt.wantErr == "") != (got.NodeError == "") {
				t.Errorf("kubelet = %+v, want the error %q", got, tt.wantErr)
			}
			if other := report.Binaries[1]; other.Node != nil || other.NodeError != "" {
				t.Errorf("kube-proxy got the cluster's Node: %+v", other)
			}
		})
	}
}
