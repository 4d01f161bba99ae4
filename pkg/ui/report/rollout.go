package report

import (
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/rollout"
	"sigs.k8s.io/swdt/pkg/ui"
)

// KindRollout is the kind of swdt rollout's document.
const KindRollout = "RolloutReport"

// The rollout's own results of a Node, beside the shared words.
const (
	// DoneBefore: an earlier run of the same rollout did it.
	DoneBefore = rollout.ResultDoneBefore
	// Interrupted: the run was cut short on it; a resumed run does it.
	Interrupted = rollout.ResultInterrupted
	// Untouched: the rollout stopped before it.
	Untouched = rollout.ResultUntouched
)

// Rollout is the -o json document of swdt rollout: the rollout's report,
// each Node with its result in the shared words (changed, unchanged,
// would-change, rolled-back, failed) or the rollout's own (done-before,
// interrupted, untouched).
type Rollout struct {
	Meta
	*rollout.Report
}

// PrintRollout shows a rollout: a line saying what was rolled where, a
// table of the selected Nodes in the order they roll and, when the
// rollout stopped, why; or the JSON document.
func PrintRollout(u *ui.UI, rep *rollout.Report) error {
	if u.Format() == ui.FormatJSON {
		return printJSON(u, Rollout{Meta: meta(KindRollout), Report: rep})
	}
	heading := fmt.Sprintf("rollout %s of %s to the Nodes %s of %s, %d at a time", rep.Name, strings.Join(rep.Provisioners, ", "), rep.Selector, rep.Server, rep.MaxUnavailable)
	if rep.Resumed {
		heading += " (resumed)"
	}
	u.Printf("%s\n", heading)
	rows := make([][]string, 0, len(rep.Nodes))
	for _, n := range rep.Nodes {
		rows = append(rows, []string{n.Name, n.Result, dash(n.Kubelet), dash(string(n.Ready)), n.Error})
	}
	if err := u.Table([]string{"NODE", "RESULT", "KUBELET", "READY", "NOTE"}, rows); err != nil {
		return err
	}
	if rep.Stopped != "" {
		u.Warn("the rollout stopped: %s", rep.Stopped)
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
