package report

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/swdt/pkg/cluster"
)

// swdt status says why a joined Node is NotReady: its conditions that are
// not in their healthy state, not only that it is NotReady.
func TestNodeWhy(t *testing.T) {
	const cni = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni plugin not initialized"
	tests := []struct {
		name string
		st   *cluster.NodeState
		want string
	}{
		{name: "no Node read"},
		{name: "not registered", st: &cluster.NodeState{Name: "win-01"}},
		{name: "Ready and healthy", st: &cluster.NodeState{Name: "win-01", Registered: true, Ready: corev1.ConditionTrue}},
		{name: "no network plugin", st: &cluster.NodeState{Name: "win-01", Registered: true, Ready: corev1.ConditionFalse,
			Conditions: []cluster.Condition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: cni}}},
			want: "Node win-01 is NotReady: Ready False (KubeletNotReady: " + cni + "); no network plugin (CNI) runs on the node yet: see docs/join.md, What makes Ready"},
		{name: "pressure and NotReady", st: &cluster.NodeState{Name: "win-01", Registered: true, Ready: corev1.ConditionFalse,
			Conditions: []cluster.Condition{
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue, Reason: "KubeletHasDiskPressure", Message: "kubelet has disk pressure"},
				{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "PLEG is not healthy"},
			}},
			want: "Node win-01 is NotReady: DiskPressure True (KubeletHasDiskPressure: kubelet has disk pressure); Ready False (KubeletNotReady: PLEG is not healthy)"},
		{name: "Ready with pressure", st: &cluster.NodeState{Name: "win-01", Registered: true, Ready: corev1.ConditionTrue,
			Conditions: []cluster.Condition{{Type: corev1.NodePIDPressure, Status: corev1.ConditionTrue, Reason: "KubeletHasInsufficientPID"}}},
			want: "Node win-01 is Ready, but: PIDPressure True (KubeletHasInsufficientPID)"},
		{name: "kubelet stopped posting", st: &cluster.NodeState{Name: "win-01", Registered: true, Ready: corev1.ConditionUnknown,
			Conditions: []cluster.Condition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}}},
			want: "Node win-01 is NotReady: Ready Unknown (NodeStatusUnknown: Kubelet stopped posting node status.)"},
		{name: "NetworkUnavailable without a reason", st: &cluster.NodeState{Name: "win-01", Registered: true, Ready: corev1.ConditionTrue,
			Conditions: []cluster.Condition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue}}},
			want: "Node win-01 is Ready, but: NetworkUnavailable True"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeWhy(tt.st); got != tt.want {
				t.Errorf("nodeWhy =\n%q, want\n%q", got, tt.want)
			}
		})
	}
}
