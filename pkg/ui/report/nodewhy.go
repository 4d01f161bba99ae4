package report

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/swdt/pkg/cluster"
)

// nodeWhy says why a registered Node is NotReady, or what else ails a
// Ready one: each condition that is not in its healthy state with its
// reason and message, and where to look when the reason is the missing
// network plugin of a fresh node. It is "" for a healthy Node.
func nodeWhy(st *cluster.NodeState) string {
	if st == nil || !st.Registered || len(st.Conditions) == 0 {
		return ""
	}
	var parts []string
	noCNI := false
	for _, c := range st.Conditions {
		part := fmt.Sprintf("%s %s", c.Type, c.Status)
		if detail := strings.Join(nonEmpty(c.Reason, c.Message), ": "); detail != "" {
			part += " (" + detail + ")"
		}
		parts = append(parts, part)
		noCNI = noCNI || (c.Type == corev1.NodeReady && strings.Contains(c.Message, "NetworkPluginNotReady"))
	}
	state := "NotReady"
	if st.Ready == corev1.ConditionTrue {
		state = "Ready, but"
	}
	out := fmt.Sprintf("Node %s is %s: %s", st.Name, state, strings.Join(parts, "; "))
	if noCNI {
		out += "; no network plugin (CNI) runs on the node yet: see docs/join.md, What makes Ready"
	}
	return out
}

// nonEmpty drops the empty strings of ss.
func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
