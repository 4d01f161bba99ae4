package app

import (
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/wins"
)

// winsNodeJSON is one node in `swdt wins -o json` output.
type winsNodeJSON struct {
	Name string `json:"name"`
	// Result is the node's outcome in the shared vocabulary: of the
	// deploy or uninstall, failed when a check failed.
	Result    string           `json:"result"`
	Deploy    *wins.Deployment `json:"deploy,omitempty"`
	Uninstall *wins.Removal    `json:"uninstall,omitempty"`
	Checks    []checkJSON      `json:"checks"`
	// Error says why nothing was done on the node.
	Error string `json:"error,omitempty"`
}

// checkJSON is a wins check with its result in the shared vocabulary.
type checkJSON struct {
	wins.Check
	Result string `json:"result"`
}

// winsJSON is `swdt wins -o json` output.
type winsJSON struct {
	docMeta
	Nodes []winsNodeJSON `json:"nodes"`
}

// printWins shows every node's deploy and checks as a table or as JSON. A
// node that could not be reached gets one row; its error is reported by
// Run.
func printWins(u *ui.UI, results []fleet.Result[*wins.Report]) error {
	out := winsJSON{docMeta: meta("WinsReport"), Nodes: []winsNodeJSON{}}
	var rows [][]string
	for _, r := range results {
		nj := winsNodeJSON{Name: r.Node, Checks: []checkJSON{}}
		if r.Err != nil {
			nj.Result, nj.Error = resultFailed, r.Err.Error()
			rows = append(rows, []string{r.Node, "-", resultFailed, "nothing done: see the error below"})
			out.Nodes = append(out.Nodes, nj)
			continue
		}
		rep := r.Value
		nj.Deploy, nj.Uninstall = rep.Deploy, rep.Uninstall
		for _, c := range rep.Checks {
			nj.Checks = append(nj.Checks, checkJSON{Check: c, Result: checkResult(c.OK)})
		}
		nj.Result = winsResult(rep)
		if d := rep.Deploy; d != nil {
			action := string(d.Action)
			if deployDryRun(d.Action) {
				action = resultWouldChange
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
	return printDoc(u, out, []string{"NODE", "STEP", "RESULT", "DETAIL"}, rows)
}

// winsResult is a node's outcome in the shared vocabulary.
func winsResult(rep *wins.Report) string {
	result := resultUnchanged
	switch d := rep.Deploy; {
	case d == nil:
	case d.Action == wins.ActionFailed:
		return resultFailed
	case d.Action == wins.ActionRolledBack:
		return resultRolledBack
	case deployDryRun(d.Action):
		result = resultWouldChange
	case d.Action != wins.ActionUnchanged:
		result = resultChanged
	}
	if rm := rep.Uninstall; rm != nil {
		result = uninstallResult(rm)
	}
	if rep.Failed() {
		return resultFailed
	}
	if len(rep.Checks) > 0 && rep.Deploy == nil && rep.Uninstall == nil {
		return resultPassed // wins verify
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
		return resultChanged
	}
	return resultUnchanged
}

func deployDetail(d *wins.Deployment) string {
	var parts []string
	if deployDryRun(d.Action) {
		parts = append(parts, "would "+string(d.Action))
	}
	binary := string(d.Binary)
	if d.Binary == hotswap.ActionUpdate {
		binary = resultWouldChange
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
