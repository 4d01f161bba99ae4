package cluster

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Node reports the conditions that are not in their healthy state, so
// that a NotReady Node says why.
func TestNodeConditions(t *testing.T) {
	healthy := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID"},
	}
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}
	noCNI := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
		Message: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"}
	disk := corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue, Reason: "KubeletHasDiskPressure", Message: "kubelet has disk pressure"}
	network := corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionTrue, Reason: "NoRouteCreated", Message: "Node created without a route"}
	lost := func(t corev1.NodeConditionType) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status."}
	}
	tests := []struct {
		name       string
		conditions []corev1.NodeCondition
		want       []corev1.NodeConditionType
	}{
		{name: "Ready and healthy", conditions: append(slices.Clone(healthy), ready)},
		{name: "no network plugin", conditions: append(slices.Clone(healthy), noCNI), want: []corev1.NodeConditionType{corev1.NodeReady}},
		{name: "disk pressure on a Ready node", conditions: []corev1.NodeCondition{healthy[0], disk, healthy[2], ready}, want: []corev1.NodeConditionType{corev1.NodeDiskPressure}},
		{name: "network unavailable and NotReady", conditions: append(slices.Clone(healthy), network, noCNI), want: []corev1.NodeConditionType{corev1.NodeNetworkUnavailable, corev1.NodeReady}},
		{name: "kubelet stopped posting", conditions: []corev1.NodeCondition{lost(corev1.NodeMemoryPressure), lost(corev1.NodeReady)}, want: []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeReady}},
		{name: "a node problem detector's condition", conditions: []corev1.NodeCondition{ready, {Type: "ReadonlyFilesystem", Status: corev1.ConditionTrue, Reason: "FilesystemIsReadOnly"}}, want: []corev1.NodeConditionType{"ReadonlyFilesystem"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "win-01"}, Status: corev1.NodeStatus{Conditions: tt.conditions}}
			c := &Cluster{Server: "https://192.0.2.1:6443", client: fake.NewClientset(node)}
			st, err := c.Node(context.Background(), "win-01")
			if err != nil {
				t.Fatal(err)
			}
			var got []corev1.NodeConditionType
			for _, cond := range st.Conditions {
				got = append(got, cond.Type)
				i := slices.IndexFunc(tt.conditions, func(c corev1.NodeCondition) bool { return c.Type == cond.Type })
				if want := tt.conditions[i]; cond.Status != want.Status || cond.Reason != want.Reason || cond.Message != want.Message {
					t.Errorf("condition %+v, want %+v", cond, want)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("conditions %v, want %v", got, tt.want)
			}
		})
	}
}
