package report

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/vm"
)

// VMNode is one node of a VM document (swdt vm ... -o json): the node's and
// the VM's names, the subcommand's fields, and the error, if any.
type VMNode struct {
	Name   string
	VM     string
	Result any
	Error  error
}

// MarshalJSON flattens the result's fields next to name, vm and error.
func (n VMNode) MarshalJSON() ([]byte, error) {
	fields := map[string]any{}
	if n.Error == nil {
		raw, err := json.Marshal(n.Result)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, err
		}
	} else {
		fields["error"] = n.Error.Error()
	}
	fields["name"], fields["vm"] = n.Name, n.VM
	switch r := n.Result.(type) {
	case nil:
	case vm.StartResult:
		fields["result"] = map[bool]string{true: Unchanged, false: Changed}[r.AlreadyRunning]
	case vm.Stopped:
		fields["result"] = map[bool]string{true: Unchanged, false: Changed}[r.AlreadyOff]
	case vm.SnapshotResult, vm.RevertResult:
		fields["result"] = Changed
	default: // status, ip, snapshots: read only
		fields["result"] = OK
	}
	if n.Error != nil {
		fields["result"] = Failed
	}
	return json.Marshal(fields)
}

// printVM prints the reports as {"nodes": [...]} or as a table whose
// rows come from rows (several per node, or none); a node that failed
// gets one row saying so, its error is reported once at the end.
func printVM[T any](u *ui.UI, reports []vm.Report[T], headers []string, rows func(T) [][]string) error {
	doc := struct {
		Meta
		Nodes []VMNode `json:"nodes"`
	}{Meta: meta(KindVM), Nodes: []VMNode{}}
	var table [][]string
	for _, r := range reports {
		doc.Nodes = append(doc.Nodes, VMNode{Name: r.Node, VM: r.VM, Result: r.Value, Error: r.Err})
		if r.Err != nil {
			row := []string{r.Node, r.VM, "failed: see the error below"}
			for len(row) < len(headers) {
				row = append(row, "-")
			}
			table = append(table, row)
			continue
		}
		for _, row := range rows(r.Value) {
			table = append(table, append([]string{r.Node, r.VM}, row...))
		}
	}
	return show(u, doc, append([]string{"NODE", "VM"}, headers...), table)
}

// PrintVMStatus shows each VM's state.
func PrintVMStatus(u *ui.UI, reports []vm.Report[vm.StatusResult]) error {
	return printVM(u, reports, []string{"PROVIDER", "HYPERVISOR", "STATE", "SNAPSHOTS", "CURRENT"}, func(r vm.StatusResult) [][]string {
		s := r.Status
		return [][]string{{string(s.Provider), s.Hypervisor, string(s.State), strconv.Itoa(s.Snapshots), orDash(s.CurrentSnapshot)}}
	})
}

// PrintVMStart shows which VMs were started.
func PrintVMStart(u *ui.UI, reports []vm.Report[vm.StartResult]) error {
	return printVM(u, reports, []string{"RESULT"}, func(r vm.StartResult) [][]string {
		if r.AlreadyRunning {
			return [][]string{{"already running"}}
		}
		return [][]string{{"started"}}
	})
}

// PrintVMStop shows how each VM was stopped; timeout is how long a
// shutdown was given.
func PrintVMStop(u *ui.UI, reports []vm.Report[vm.Stopped], timeout time.Duration) error {
	return printVM(u, reports, []string{"RESULT"}, func(r vm.Stopped) [][]string {
		switch {
		case r.AlreadyOff:
			return [][]string{{"already off"}}
		case r.Forced:
			return [][]string{{fmt.Sprintf("turned off (no shutdown within %s)", timeout)}}
		}
		return [][]string{{"shut down"}}
	})
}

// PrintVMAddresses shows each VM's addresses.
func PrintVMAddresses(u *ui.UI, reports []vm.Report[vm.AddressesResult]) error {
	return printVM(u, reports, []string{"INTERFACE", "MAC", "ADDRESS", "SOURCE"}, func(r vm.AddressesResult) [][]string {
		if len(r.Addresses) == 0 {
			return [][]string{{"(none)", "-", "-", "-"}}
		}
		var rows [][]string
		for _, a := range r.Addresses {
			rows = append(rows, []string{a.Interface, orDash(a.MAC), a.IP, a.Source})
		}
		return rows
	})
}

// PrintVMSnapshot shows the snapshot each VM took.
func PrintVMSnapshot(u *ui.UI, reports []vm.Report[vm.SnapshotResult]) error {
	return printVM(u, reports, []string{"SNAPSHOT", "RESULT"}, func(r vm.SnapshotResult) [][]string {
		return [][]string{{r.Snapshot, "taken"}}
	})
}

// PrintVMRevert shows the snapshot each VM went back to.
func PrintVMRevert(u *ui.UI, reports []vm.Report[vm.RevertResult]) error {
	return printVM(u, reports, []string{"SNAPSHOT", "STATE"}, func(r vm.RevertResult) [][]string {
		return [][]string{{r.Snapshot, string(r.State)}}
	})
}

// PrintVMSnapshots lists each VM's snapshots.
func PrintVMSnapshots(u *ui.UI, reports []vm.Report[vm.SnapshotsResult]) error {
	return printVM(u, reports, []string{"SNAPSHOT", "CREATED", "PARENT", "CURRENT"}, func(r vm.SnapshotsResult) [][]string {
		if len(r.Snapshots) == 0 {
			return [][]string{{"(none)", "-", "-", "-"}}
		}
		var rows [][]string
		for _, s := range r.Snapshots {
			current := ""
			if s.Current {
				current = "*"
			}
			rows = append(rows, []string{s.Name, s.Created.Local().Format(time.DateTime), orDash(s.Parent), current})
		}
		return rows
	})
}
