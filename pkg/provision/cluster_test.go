package provision

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
)

// What the wait's outcome means: only a cluster that answered without
// confirming rolls the kubelet back.
func TestDecide(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		interrupted error
		want        string
	}{
		{name: "confirmed", want: ClusterConfirmed},
		{name: "the Node lacked something", err: &cluster.UnmetError{Node: "win-01", Missing: "the Node reports kubelet v1.37.2, not v1.37.3"}, want: ClusterRolledBack},
		{name: "wrapped", err: errors.Join(errors.New("wait"), &cluster.UnmetError{Node: "win-01", Missing: "x"}), want: ClusterRolledBack},
		{name: "the control plane went away", err: errors.New("cannot reach the control plane at https://127.0.0.1:6443"), want: ClusterUnread},
		{name: "Ctrl-C during the wait", err: &cluster.UnmetError{Node: "win-01", Missing: "x"}, interrupted: context.Canceled, want: ClusterInterrupted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(tt.err, tt.interrupted); got != tt.want {
				t.Errorf("decide = %s, want %s", got, tt.want)
			}
		})
	}
}

// What the Node must show after the swap: the provisioner's version, a
// renewal after the one seen right after the swap, and Ready only when it
// was Ready before.
func TestConfirmation(t *testing.T) {
	renewed := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name             string
		version          string
		before, baseline cluster.NodeState
		want             cluster.Want
	}{
		{name: "NotReady before: NotReady is fine", version: "v1.37.3",
			before: cluster.NodeState{Registered: true, Ready: corev1.ConditionFalse}, baseline: cluster.NodeState{LeaseRenewed: renewed},
			want: cluster.Want{KubeletVersion: "v1.37.3", RenewedAfter: renewed}},
		{name: "Ready before: Ready again", version: "v1.37.3",
			before: cluster.NodeState{Registered: true, Ready: corev1.ConditionTrue}, baseline: cluster.NodeState{LeaseRenewed: renewed},
			want: cluster.Want{KubeletVersion: "v1.37.3", RenewedAfter: renewed, Ready: true}},
		{name: "no version: the Lease proves it", before: cluster.NodeState{Registered: true, Ready: corev1.ConditionUnknown},
			baseline: cluster.NodeState{LeaseRenewed: renewed}, want: cluster.Want{RenewedAfter: renewed}},
		{name: "no Lease yet: any renewal", before: cluster.NodeState{Registered: true}, want: cluster.Want{RenewedAfter: time.Unix(0, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Confirmation(tt.version, tt.before, tt.baseline)
			if got.KubeletVersion != tt.want.KubeletVersion || got.Ready != tt.want.Ready || !got.RenewedAfter.Equal(tt.want.RenewedAfter) || got.RenewedAfter.IsZero() {
				t.Errorf("Confirmation = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestClusterCheckTimeout(t *testing.T) {
	tests := []struct {
		name   string
		join   *v1alpha1.JoinSpec
		health time.Duration
		want   time.Duration
	}{
		{name: "default", join: &v1alpha1.JoinSpec{}, want: DefaultClusterCheck},
		{name: "a longer health timeout", join: &v1alpha1.JoinSpec{}, health: 2 * time.Minute, want: 2 * time.Minute},
		{name: "a shorter health timeout", join: &v1alpha1.JoinSpec{}, health: 10 * time.Second, want: DefaultClusterCheck},
		{name: "the join section's timeout", join: &v1alpha1.JoinSpec{Timeout: &metav1.Duration{Duration: 20 * time.Second}}, health: 2 * time.Minute, want: 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ClusterCheckTimeout(tt.join, tt.health); got != tt.want {
				t.Errorf("ClusterCheckTimeout = %s, want %s", got, tt.want)
			}
		})
	}
}

// The check applies to a node with a join section whose run includes its
// kubelet; a kubeconfig that cannot be read stops the run before it
// changes anything.
func TestNewClusterCheck(t *testing.T) {
	kubelet := v1alpha1.ProvisionerSpec{Name: "kubelet", Version: "1.37.3", SourceURL: "kubelet.exe", Destination: `C:\k\kubelet.exe`}
	proxy := v1alpha1.ProvisionerSpec{Name: "kube-proxy", SourceURL: "kube-proxy.exe", Destination: `C:\k\kube-proxy.exe`}
	tests := []struct {
		name        string
		join        *v1alpha1.JoinSpec
		only        []string
		wantCheck   bool
		wantErr     string
		wantVersion string
	}{
		{name: "no join section", wantCheck: false},
		{name: "kubelet left out", join: &v1alpha1.JoinSpec{Kubeconfig: "../cluster/testdata/one.kubeconfig"}, only: []string{"kube-proxy"}},
		{name: "kubelet swapped", join: &v1alpha1.JoinSpec{Kubeconfig: "../cluster/testdata/one.kubeconfig"}, wantCheck: true, wantVersion: "v1.37.3"},
		{name: "no kubeconfig", join: &v1alpha1.JoinSpec{Kubeconfig: "testdata/none.kubeconfig"}, wantErr: "read kubeconfig testdata/none.kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := v1alpha1.Node{ObjectMeta: metav1.ObjectMeta{Name: "win"},
				Spec: v1alpha1.NodeSpec{Kubernetes: v1alpha1.KubernetesSpec{Provisioners: []v1alpha1.ProvisionerSpec{kubelet, proxy}, Join: tt.join}}}
			nodes, err := selectProvisioners([]v1alpha1.Node{spec}, tt.only)
			if err != nil {
				t.Fatal(err)
			}
			chk, err := newClusterCheck(nodes[0].spec, nodes[0].provs, 0)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "nothing was changed") {
					t.Fatalf("err = %v, want %q and that nothing was changed", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case (chk != nil) != tt.wantCheck:
				t.Fatalf("check = %+v, want one: %v", chk, tt.wantCheck)
			case chk != nil && (chk.version != tt.wantVersion || chk.kubelet != "kubelet" || chk.timeout != DefaultClusterCheck):
				t.Errorf("check = %+v", chk)
			}
		})
	}
}
