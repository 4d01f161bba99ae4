package report

import (
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/provision"
	"sigs.k8s.io/swdt/pkg/ui"
)

// Kubernetes is the -o json document of swdt kubernetes.
type Kubernetes struct {
	Meta
	Nodes []KubernetesNode `json:"nodes"`
}

// KubernetesNode is one node of a Kubernetes document.
type KubernetesNode struct {
	Name string `json:"name"`
	// Result is the node's outcome: failed when it could not be reached
	// or a provisioner failed, else the weightiest of its provisioners'.
	Result string `json:"result"`
	// Error is set when the node could not be reached or inspected.
	Error string `json:"error,omitempty"`
	// Repair is what the run found of an interrupted swap and repaired
	// before anything else.
	Repair *hotswap.Repair `json:"repair,omitempty"`
	// Provisioners and Services are left out (nil) when the node failed
	// before its report.
	Provisioners []KubernetesProvisioner `json:"provisioners,omitzero"`
	// Services are the services the swap stopped (the provisioners' own
	// and their dependents), in stop order, with their downtime.
	Services []KubernetesService `json:"services,omitzero"`
	// Snapshot names the VM snapshot taken before the swap (--snapshot).
	Snapshot string `json:"snapshot,omitempty"`
	// Cluster is the cluster check of a kubelet swap (spec.kubernetes.join).
	Cluster *provision.ClusterCheck `json:"cluster,omitempty"`
}

// KubernetesProvisioner is one provisioner of a KubernetesNode.
type KubernetesProvisioner struct {
	Name string `json:"name"`
	// Result is Action in the vocabulary every command shares.
	Result    string `json:"result"`
	Action    string `json:"action"`
	BytesSent int64  `json:"bytesSent"`
	// FileSize is the size of the binary staged; absent when nothing was.
	FileSize   int64  `json:"fileSize,omitempty"`
	Transfer   string `json:"transfer,omitempty"`
	DurationMs int64  `json:"durationMs"`
	DowntimeMs int64  `json:"downtimeMs"`
	Error      string `json:"error"`
	Detail     string `json:"detail,omitempty"`
	// Registered is true when the run registered the service
	// (provisioner's register).
	Registered bool `json:"registered,omitempty"`
	// Reconfigured is true when the run brought the service's
	// configuration in line with the provisioner's register.
	Reconfigured bool `json:"reconfigured,omitempty"`
	// Drift is how the service's configuration differed from register.
	Drift []string `json:"drift,omitempty"`
}

// KubernetesService is a service the swap stopped, with its downtime.
type KubernetesService struct {
	Name       string `json:"name"`
	DowntimeMs int64  `json:"downtimeMs"`
	// Running is false when the service is not Running after the swap.
	Running bool `json:"running"`
}

// PrintKubernetes shows one run of swdt kubernetes as a table or JSON.
func PrintKubernetes(u *ui.UI, dryRun bool, results []fleet.Result[provision.NodeReport]) error {
	doc := Kubernetes{Meta: meta(KindKubernetes), Nodes: []KubernetesNode{}}
	many := len(results) > 1
	headers := []string{"PROVISIONER", "ACTION", "SENT", "SAVED", "TIME", "DOWNTIME"}
	if dryRun {
		headers = []string{"PROVISIONER", "ACTION", "REASON", "DESTINATION"}
	}
	unreached := []string{"-", "failed", "-", "-", "-", "-"}[:len(headers)]
	if many {
		headers = append([]string{"NODE"}, headers...)
	}
	var rows [][]string
	row := func(node string, cells ...string) {
		if many {
			cells = append([]string{node}, cells...)
		}
		rows = append(rows, cells)
	}
	for _, r := range results {
		n := KubernetesNode{Name: r.Node, Snapshot: r.Value.Snapshot}
		if r.Err != nil {
			n.Result, n.Error = Failed, r.Err.Error()
			doc.Nodes = append(doc.Nodes, n)
			row(r.Node, unreached...)
			continue
		}
		n.Provisioners, n.Services = []KubernetesProvisioner{}, []KubernetesService{}
		n.Repair, n.Cluster = r.Value.Repair, r.Value.Cluster
		for _, d := range r.Value.Services {
			n.Services = append(n.Services, KubernetesService{Name: d.Service, DowntimeMs: d.Downtime.Milliseconds(), Running: d.Running})
		}
		// A service the swap stopped without changing its binary (a
		// dependent, a provisioner left out by --only) was restarted:
		// the table says so, with its downtime.
		stopped := map[string]hotswap.ServiceDowntime{}
		for _, d := range r.Value.Services {
			stopped[strings.ToLower(d.Service)] = d
		}
		for i, res := range r.Value.Results {
			n.Provisioners = append(n.Provisioners, KubernetesProvisioner{
				Name: res.Name, Result: provisionResult(res.Action), Action: string(res.Action), BytesSent: res.BytesSent, FileSize: res.FileSize, Transfer: res.Transfer,
				DurationMs: res.Duration.Milliseconds(), DowntimeMs: res.Downtime.Milliseconds(),
				Error: res.Error, Detail: res.Detail, Registered: res.Registered, Reconfigured: res.Reconfigured,
			})
			if p := r.Value.Plan; p != nil && i < len(p.Steps) {
				n.Provisioners[len(n.Provisioners)-1].Drift = p.Steps[i].Drift
			}
			if dryRun {
				step := r.Value.Plan.Steps[i]
				row(r.Node, res.Name, dryRunAction(res.Action), step.Reason, step.Item.Destination)
				continue
			}
			action, downtime := string(res.Action), res.Downtime
			if p := r.Value.Plan; p != nil && i < len(p.Steps) && p.Steps[i].Item.Service != "" {
				svc := strings.ToLower(p.Steps[i].Item.Service)
				if d, ok := stopped[svc]; ok {
					delete(stopped, svc)
					if res.Action == hotswap.ActionUnchanged {
						action, downtime = actionRestarted, d.Downtime
					}
				}
			}
			row(r.Node, res.Name, action, ui.Bytes(res.BytesSent), saved(res), duration(res.Duration), duration(downtime))
		}
		for _, d := range r.Value.Services {
			if _, ok := stopped[strings.ToLower(d.Service)]; ok {
				row(r.Node, d.Service, actionRestarted, "-", "-", "-", duration(d.Downtime))
			}
		}
		items := make([]string, len(n.Provisioners))
		for i, p := range n.Provisioners {
			items[i] = p.Result
		}
		n.Result = worst(items...)
		doc.Nodes = append(doc.Nodes, n)
	}
	return show(u, doc, headers, rows)
}

// provisionResult maps a provisioner's action to the shared vocabulary.
func provisionResult(a hotswap.Action) string {
	switch a {
	case hotswap.ActionUpdated, hotswap.ActionReconfigured:
		return Changed
	case hotswap.ActionUnchanged:
		return Unchanged
	case hotswap.ActionUpdate, hotswap.ActionReconfigure:
		return WouldChange
	case hotswap.ActionRolledBack:
		return RolledBack
	default:
		return Failed
	}
}

// actionRestarted is the table's action of a service the swap stopped
// and started again without changing its binary.
const actionRestarted = "restarted"

// dryRunAction is a dry run's action in the words every command's dry run
// uses: would-change for what a run would swap.
func dryRunAction(a hotswap.Action) string {
	if a == hotswap.ActionUpdate || a == hotswap.ActionReconfigure {
		return WouldChange
	}
	return string(a)
}

// saved is how much less than the file went over the wire, and how:
// "99% patch", "46% compressed"; "-" when nothing was saved.
func saved(res hotswap.Result) string {
	if res.FileSize <= 0 || res.BytesSent >= res.FileSize || res.Transfer == "" || res.Transfer == hotswap.TransferPlain {
		return "-"
	}
	pct := 100 * (res.FileSize - res.BytesSent) / res.FileSize
	return fmt.Sprintf("%d%% %s", pct, res.Transfer)
}

func duration(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(10 * time.Millisecond).String()
}
