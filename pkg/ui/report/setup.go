package report

import (
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/setup"
	"sigs.k8s.io/swdt/pkg/ui"
)

// Setup is the -o json document of swdt setup.
type Setup struct {
	Meta
	Nodes []SetupNode `json:"nodes"`
}

// SetupNode is one node of a Setup document.
type SetupNode struct {
	Name string `json:"name"`
	// Result is failed when the node could not be set up or a step
	// failed, else the weightiest of its steps'.
	Result string `json:"result"`
	// Steps are left out (nil) when the node failed before its report.
	Steps []setup.Step `json:"steps,omitzero"`
	// Error says why nothing was done on the node.
	Error string `json:"error,omitempty"`
}

// PrintSetup shows every node's steps as a table or as JSON. A node that
// could not be set up gets one failed row; its error is reported by Run.
func PrintSetup(u *ui.UI, results []fleet.Result[*setup.Report]) error {
	out := Setup{Meta: meta(KindSetup), Nodes: []SetupNode{}}
	var rows [][]string
	for _, r := range results {
		nj := SetupNode{Name: r.Node}
		if r.Err != nil {
			nj.Result, nj.Error = Failed, r.Err.Error()
			rows = append(rows, []string{r.Node, "-", Failed, "nothing done: see the error below"})
		} else {
			nj.Steps = append([]setup.Step{}, r.Value.Steps...)
			items := make([]string, len(r.Value.Steps))
			for i, s := range r.Value.Steps {
				items[i] = string(s.Result)
				rows = append(rows, []string{r.Node, s.Name, string(s.Result), s.Detail})
			}
			nj.Result = worst(items...)
		}
		out.Nodes = append(out.Nodes, nj)
	}
	return show(u, out, []string{"NODE", "STEP", "RESULT", "DETAIL"}, rows)
}
