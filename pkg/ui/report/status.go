package report

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/status"
	"sigs.k8s.io/swdt/pkg/ui"
)

// Status is the -o json document of swdt status.
type Status struct {
	Meta
	Nodes []StatusNode `json:"nodes"`
}

// StatusNode is one node of a Status document.
type StatusNode struct {
	Name string `json:"name"`
	// Result is in-sync when the node runs exactly the wanted binaries,
	// out-of-sync when one is missing, differs, is unverified or is not
	// what its service runs, failed when the node could not be read.
	Result string `json:"result"`
	*status.Report
	// Error says why the node could not be read.
	Error string `json:"error,omitempty"`
}

// statusResult is a node's result in the shared vocabulary.
func statusResult(r *status.Report) string {
	if r != nil && r.OutOfSync() > 0 {
		return OutOfSync
	}
	return InSync
}

// PrintStatus shows each node's facts and a table of its binaries, or JSON.
func PrintStatus(u *ui.UI, results []fleet.Result[*status.Report]) error {
	if u.Format() == ui.FormatJSON {
		doc := Status{Meta: meta(KindStatus), Nodes: []StatusNode{}}
		for _, r := range results {
			nj := StatusNode{Name: r.Node, Result: statusResult(r.Value), Report: r.Value}
			if r.Err != nil {
				nj.Result, nj.Error = Failed, r.Err.Error()
			}
			doc.Nodes = append(doc.Nodes, nj)
		}
		return printJSON(u, doc)
	}
	var rows [][]string
	for _, r := range results {
		if r.Err != nil {
			rows = append(rows, []string{r.Node, "-", "-", "-", "-", "-", "unreachable: see the error below"})
			continue
		}
		f := r.Value.Node
		admin := "administrator"
		if !f.IsAdmin {
			admin = "not an administrator"
		}
		u.Step(r.Node, "%s (%s %s, build %s.%d) as %s, %s", f.Hostname, f.ProductName, f.DisplayVersion, f.CurrentBuild, f.UBR, f.Username, admin)
		for _, f := range r.Value.UnsafeFolders {
			u.Warn("node %s: %s", r.Node, f)
		}
		if r.Value.UnfinishedSwap != "" {
			u.Warn("node %s: %s", r.Node, r.Value.UnfinishedSwap)
		}
		for _, b := range r.Value.Binaries {
			pid := "-"
			if b.PID > 0 {
				pid = strconv.Itoa(b.PID)
			}
			rows = append(rows, []string{r.Node, b.Name, statusText(b) + clusterText(b), pid, orDash(b.Version), shortSHA(b), b.Source})
			if b.NodeError != "" {
				u.Warn("node %s: the cluster could not be read: %s", r.Node, b.NodeError)
			}
			if why := nodeWhy(b.Node); why != "" {
				u.Warn("node %s: %s", r.Node, why)
			}
			if b.Source == status.RunsOther {
				u.Warn("node %s: service %s runs %s, not the destination %s", r.Node, b.Service, b.ServiceRuns, b.Destination)
			}
		}
	}
	return u.Table([]string{"NODE", "NAME", "SERVICE", "PID", "VERSION", "SHA256", "VS SOURCE"}, rows)
}

func statusText(b status.Binary) string {
	if b.StartType == "" {
		return b.Status
	}
	if b.RunsVia != "" && b.RunsVia != "directly" {
		return fmt.Sprintf("%s (%s, %s)", b.Status, b.StartType, b.RunsVia)
	}
	return fmt.Sprintf("%s (%s)", b.Status, b.StartType)
}

// clusterText is what the cluster says of a kubelet's Node, to show
// beside its service's state: "; Node NotReady, v1.37.2".
func clusterText(b status.Binary) string {
	switch {
	case b.NodeError != "":
		return "; Node unread"
	case b.Node == nil:
		return ""
	case !b.Node.Registered:
		return "; Node " + b.Node.Name + " not registered"
	case b.Node.Ready == corev1.ConditionTrue:
		return "; Node Ready, " + b.Node.KubeletVersion
	}
	return "; Node NotReady, " + b.Node.KubeletVersion
}

func shortSHA(b status.Binary) string {
	if !b.Present {
		return "no file"
	}
	return b.SHA256[:min(12, len(b.SHA256))]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
