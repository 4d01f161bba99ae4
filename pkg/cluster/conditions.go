package cluster

import (
	corev1 "k8s.io/api/core/v1"
)

// Condition is one condition of a Node that is not in its healthy state.
type Condition struct {
	// Type is the condition's type: Ready, MemoryPressure, DiskPressure,
	// PIDPressure, NetworkUnavailable, or one a node problem detector
	// adds.
	Type corev1.NodeConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// Reason and Message are what the kubelet (or the node controller)
	// says of it.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// unhealthy lists the conditions of a Node that are not in their healthy
// state, in the Node's order: Ready is healthy when True; every other
// condition (the kubelet's pressures, NetworkUnavailable, a node problem
// detector's) is healthy when False. Unknown is never healthy: the node
// controller sets every condition Unknown once the kubelet stops posting.
func unhealthy(conds []corev1.NodeCondition) []Condition {
	var out []Condition
	for _, c := range conds {
		healthy := corev1.ConditionFalse
		if c.Type == corev1.NodeReady {
			healthy = corev1.ConditionTrue
		}
		if c.Status != healthy {
			out = append(out, Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
		}
	}
	return out
}
