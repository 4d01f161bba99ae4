package ui

import "fmt"

// RolloutNode is one Node's row in a rollout's report.
type RolloutNode struct {
	// Node is the Node's name; Result what the rollout did there.
	Node, Result string
	// Kubelet and Ready are what the Node reports now.
	Kubelet, Ready string
	// Note says why it failed, or what its swap did.
	Note string
}

// Rollout prints a rollout's report: doc with -o json; else a line that
// says what was rolled where, a table of the Nodes (in the order they
// roll) and, when the rollout stopped, why.
func (u *UI) Rollout(doc any, heading string, nodes []RolloutNode, stopped string) error {
	if u.Format() == FormatJSON {
		return u.JSON(doc)
	}
	u.Printf("%s\n", heading)
	rows := make([][]string, 0, len(nodes))
	for _, n := range nodes {
		rows = append(rows, []string{n.Node, n.Result, dash(n.Kubelet), dash(n.Ready), n.Note})
	}
	if err := u.Table([]string{"NODE", "RESULT", "KUBELET", "READY", "NOTE"}, rows); err != nil {
		return fmt.Errorf("print the rollout: %w", err)
	}
	if stopped != "" {
		u.Warn("the rollout stopped: %s", stopped)
	}
	return nil
}

// dash stands for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
