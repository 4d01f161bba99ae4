package report

import (
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/wins"
)

// WinsNode is one node of a Wins document.
type WinsNode struct {
	Name string `json:"name"`
	// Result is the node's outcome in the shared vocabulary: of the
	// deploy or uninstall, failed when a check failed.
	Result    string           `json:"result"`
	Deploy    *wins.Deployment `json:"deploy,omitempty"`
	Uninstall *wins.Removal    `json:"uninstall,omitempty"`
	// Checks are left out (nil) when the node failed before its report.
	Checks []WinsCheck `json:"checks,omitzero"`
	// Error says why nothing was done on the node.
	Error string `json:"error,omitempty"`
}

// WinsCheck is a wins check with its result in the shared vocabulary.
type WinsCheck struct {
	wins.Check
	Result string `json:"result"`
}

// Wins is the -o json document of swdt wins, wins verify and wins uninstall.
type Wins struct {
	Meta
	Nodes []WinsNode `json:"nodes"`
}

// PrintWins shows every node's deploy and checks as a table or as JSON. A
// node that could not be reached gets one row; its error is reported by
// Run.
func PrintWins(u *ui.UI, results []fleet.Result[*wins.Report]) error {
	out := Wins{Meta: meta(KindWins), Nodes: []WinsNode{}}
	var rows [][]string
	for _, r := range results {
		nj := WinsNode{Name: r.Node}
		if r.Err != nil {
			nj.Result, nj.Error = Failed, r.Err.Error()
			rows = append(rows, []string{r.Node, "-", Failed, "nothing done: see the error below"})
			out.Nodes = append(out.Nodes, nj)
			continue
		}
		rep := r.Value
		nj.Deploy, nj.Uninstall, nj.Checks = rep.Deploy, rep.Uninstall, []WinsCheck{}
		for _, c := range rep.Checks {
			nj.Checks = append(nj.Checks, WinsCheck{Check: c, Result: checkResult(c.OK)})
		}
		nj.Result = winsResult(rep)
		if d := rep.Deploy; d != nil {
			action := string(d.Action)
			if deployDryRun(d.Action) {
				action = WouldChange
			}
			rows = append(rows, []string{r.Node, "deploy", action, deployDetail(d)})
		}
		if rm := rep.Uninstall; rm != nil {
			rows = append(rows, []string{r.Node, "uninstall", uninstallResult(rm), uninstallDetail(rm)})
		}
		for _, c := range rep.Checks {
			rows = append(rows, []string{r.Node, c.Name, checkResult(c.OK), c.Detail})
		}
		out.Nodes = append(out.Nodes, nj)
	}
	return show(u, out, []string{"NODE", "STEP", "RESULT", "DETAIL"}, rows)
}

// winsResult is a node's outcome in the shared vocabulary.
func winsResult(rep *wins.Report) string {
	result := Unchanged
	switch d := rep.Deploy; {
	case d == nil:
	case d.Action == wins.ActionFailed:
		return Failed
	case d.Action == wins.ActionRolledBack:
		return RolledBack
	case deployDryRun(d.Action):
		result = WouldChange
	case d.Action != wins.ActionUnchanged:
		result = Changed
	}
	if rm := rep.Uninstall; rm != nil {
		result = uninstallResult(rm)
	}
	if rep.Failed() {
		return Failed
	}
	if len(rep.Checks) > 0 && rep.Deploy == nil && rep.Uninstall == nil {
		return Passed // wins verify
	}
	return result
}

// deployDryRun reports whether a is what a dry run says it would do.
func deployDryRun(a wins.Action) bool {
	switch a {
	case wins.ActionInstall, wins.ActionUpdate, wins.ActionReconfigure, wins.ActionStart:
		return true
	}
	return false
}

// uninstallResult is changed when the uninstall removed anything.
func uninstallResult(r *wins.Removal) string {
	if r.ServiceRemoved || len(r.Removed) > 0 || r.StoppedProcesses > 0 {
		return Changed
	}
	return Unchanged
}

func deployDetail(d *wins.Deployment) string {
	var parts []string
	if deployDryRun(d.Action) {
		parts = append(parts, "would "+string(d.Action))
	}
	binary := string(d.Binary)
	if d.Binary == hotswap.ActionUpdate {
		binary = WouldChange
	}
	parts = append(parts, "wins.exe "+binary)
	if d.BytesSent > 0 {
		parts = append(parts, fmt.Sprintf("%d bytes sent", d.BytesSent))
	}
	switch {
	case d.ConfigChanged && deployDryRun(d.Action):
		parts = append(parts, "config would be written")
	case d.ConfigChanged:
		parts = append(parts, "config written")
	}
	if d.Registered {
		parts = append(parts, "service registered")
	}
	if d.Restarted {
		parts = append(parts, "service (re)started")
	}
	if d.StoppedOrphans > 0 {
		parts = append(parts, fmt.Sprintf("%d orphaned process(es) stopped", d.StoppedOrphans))
	}
	if d.Error != "" {
		parts = append(parts, d.Error)
	}
	return strings.Join(parts, "; ")
}

func uninstallDetail(r *wins.Removal) string {
	parts := []string{fmt.Sprintf("service removed: %t", r.ServiceRemoved), fmt.Sprintf("%d file(s) removed", len(r.Removed))}
	if r.StoppedProcesses > 0 {
		parts = append(parts, fmt.Sprintf("%d process(es) stopped", r.StoppedProcesses))
	}
	if r.ConfigBackup != "" {
		parts = append(parts, "config kept as "+r.ConfigBackup)
	}
	return strings.Join(parts, "; ")
}
