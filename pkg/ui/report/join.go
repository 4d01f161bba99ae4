package report

import (
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/join"
	"sigs.k8s.io/swdt/pkg/ui"
)

// JoinNode is one node of a Join document.
type JoinNode struct {
	Name string `json:"name"`
	*join.Report
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

// Join is the -o json document of swdt join and join --reset.
type Join struct {
	Meta
	Nodes []JoinNode `json:"nodes"`
}

// PrintJoin shows every node's join (or reset) as a table or as JSON.
func PrintJoin(u *ui.UI, results []fleet.Result[*join.Report]) error {
	out := Join{Meta: meta(KindJoin), Nodes: []JoinNode{}}
	var rows [][]string
	for _, r := range results {
		nj := JoinNode{Name: r.Node, Report: r.Value}
		if r.Err != nil {
			nj.Result, nj.Error = Failed, r.Err.Error()
			rows = append(rows, []string{r.Node, "-", Failed, "nothing done: see the error below"})
			out.Nodes = append(out.Nodes, nj)
			continue
		}
		rep := r.Value
		// The report's own result and error, which the outer fields
		// would otherwise hide.
		nj.Result, nj.Error = rep.Result, rep.Error
		rows = append(rows, []string{r.Node, rep.NodeName, rep.Result, joinDetail(rep)})
		out.Nodes = append(out.Nodes, nj)
	}
	return show(u, out, []string{"NODE", "K8S NODE", "RESULT", "DETAIL"}, rows)
}

func joinDetail(r *join.Report) string {
	var parts []string
	if len(r.Removed) > 0 {
		parts = append(parts, "removed "+strings.Join(r.Removed, ", "))
	}
	for _, p := range r.Ended {
		parts = append(parts, fmt.Sprintf("ended process %d (%s)", p.PID, p.Name))
	}
	switch {
	case r.Error != "":
		parts = append(parts, r.Error)
	case len(r.Removed) > 0:
	case r.Node.Registered:
		parts = append(parts, fmt.Sprintf("kubelet %s, Ready=%s", r.Node.KubeletVersion, r.Node.Ready))
	default:
		parts = append(parts, "no Node")
	}
	if r.Rebooted {
		parts = append(parts, "Containers feature installed (rebooted once)")
	}
	for _, b := range r.Binaries {
		parts = append(parts, b.Name+" "+string(b.Action))
	}
	if len(r.FirewallRules) > 0 {
		parts = append(parts, "firewall "+strings.Join(r.FirewallRules, ", "))
	}
	if r.Note != "" {
		parts = append(parts, r.Note)
	}
	return strings.Join(parts, "; ")
}
