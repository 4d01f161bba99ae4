package app

import (
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/wins"
)

// winsNodeJSON is one node in `swdt wins -o json` output.
type winsNodeJSON struct {
	Name      string           `json:"name"`
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
			nj.Error = r.Err.Error()
			rows = append(rows, []string{r.Node, "-", "failed", "nothing done: see the error below"})
			out.Nodes = append(out.Nodes, nj)
			continue
		}
		rep := r.Value
		nj.Deploy, nj.Uninstall = rep.Deploy, rep.Uninstall
		for _, c := range rep.Checks {
			nj.Checks = append(nj.Checks, checkJSON{Check: c, Result: checkResult(c.OK)})
		}
		if d := rep.Deploy; d != nil {
			rows = append(rows, []string{r.Node, "deploy", string(d.Action), deployDetail(d)})
		}
		if rm := rep.Uninstall; rm != nil {
			rows = append(rows, []string{r.Node, "uninstall", "done", uninstallDetail(rm)})
		}
		for _, c := range rep.Checks {
			result := "ok"
			if !c.OK {
				result = "FAILED"
			}
			rows = append(rows, []string{r.Node, c.Name, result, c.Detail})
		}
		out.Nodes = append(out.Nodes, nj)
	}
	return printDoc(u, out, []string{"NODE", "STEP", "RESULT", "DETAIL"}, rows)
}

func deployDetail(d *wins.Deployment) string {
	var parts []string
	parts = append(parts, "wins.exe "+string(d.Binary))
	if d.BytesSent > 0 {
		parts = append(parts, fmt.Sprintf("%d bytes sent", d.BytesSent))
	}
	if d.ConfigChanged {
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
