package app

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/provision"
	"sigs.k8s.io/swdt/pkg/ui"
)

// kubeJSON is the -o json document of swdt kubernetes.
type kubeJSON struct {
	docMeta
	Nodes []kubeNodeJSON `json:"nodes"`
}

type kubeNodeJSON struct {
	Name string `json:"name"`
	// Error is set when the node could not be reached or inspected.
	Error string `json:"error,omitempty"`
	// Repair is what the run found of an interrupted swap and repaired
	// before anything else.
	Repair       *hotswap.Repair `json:"repair,omitempty"`
	Provisioners []kubeProvJSON  `json:"provisioners"`
	// Services are the services the swap stopped (the provisioners' own
	// and their dependents), in stop order, with their downtime.
	Services []kubeServiceJSON `json:"services"`
	// Snapshot names the VM snapshot taken before the swap (--snapshot).
	Snapshot string `json:"snapshot,omitempty"`
	// Cluster is the cluster check of a kubelet swap (spec.kubernetes.join).
	Cluster *provision.ClusterCheck `json:"cluster,omitempty"`
}

type kubeProvJSON struct {
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

type kubeServiceJSON struct {
	Name       string `json:"name"`
	DowntimeMs int64  `json:"downtimeMs"`
	// Running is false when the service is not Running after the swap.
	Running bool `json:"running"`
}

// printKubernetes shows one run of swdt kubernetes as a table or JSON.
func printKubernetes(u *ui.UI, dryRun bool, results []fleet.Result[provision.NodeReport]) error {
	doc := kubeJSON{docMeta: meta("KubernetesReport"), Nodes: []kubeNodeJSON{}}
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
		n := kubeNodeJSON{Name: r.Node, Provisioners: []kubeProvJSON{}, Services: []kubeServiceJSON{}, Snapshot: r.Value.Snapshot}
		if r.Err != nil {
			n.Error = r.Err.Error()
			doc.Nodes = append(doc.Nodes, n)
			row(r.Node, unreached...)
			continue
		}
		n.Repair, n.Cluster = r.Value.Repair, r.Value.Cluster
		for _, d := range r.Value.Services {
			n.Services = append(n.Services, kubeServiceJSON{Name: d.Service, DowntimeMs: d.Downtime.Milliseconds(), Running: d.Running})
		}
		// A service the swap stopped without changing its binary (a
		// dependent, a provisioner left out by --only) was restarted:
		// the table says so, with its downtime.
		stopped := map[string]hotswap.ServiceDowntime{}
		for _, d := range r.Value.Services {
			stopped[strings.ToLower(d.Service)] = d
		}
		for i, res := range r.Value.Results {
			n.Provisioners = append(n.Provisioners, kubeProvJSON{
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
		doc.Nodes = append(doc.Nodes, n)
	}
	return printDoc(u, doc, headers, rows)
}

// actionRestarted is the table's action of a service the swap stopped
// and started again without changing its binary.
const actionRestarted = "restarted"

// dryRunAction is a dry run's action in the words every command's dry run
// uses: would-change for what a run would swap.
func dryRunAction(a hotswap.Action) string {
	if a == hotswap.ActionUpdate || a == hotswap.ActionReconfigure {
		return resultWouldChange
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

// kubeObserver shows a swdt kubernetes run on the terminal: steps, a bar
// per download and per staged file.
type kubeObserver struct {
	progress *ui.Progress

	mu sync.Mutex
	// busy counts the nodes being swapped now; cut is set when Ctrl-C
	// came while one was.
	busy int
	cut  bool
}

// interrupted records that Ctrl-C came, and whether it cut a swap short.
func (o *kubeObserver) interrupted() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cut = o.cut || o.busy > 0
}

// cutShort reports whether Ctrl-C came while a node was being swapped.
func (o *kubeObserver) cutShort() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cut
}

func (o *kubeObserver) Step(node, msg string) { o.progress.Step(node, "%s", msg) }
func (o *kubeObserver) Warn(msg string)       { o.progress.Warn("%s", msg) }
func (o *kubeObserver) Note(msg string)       { o.progress.Note("%s", msg) }

func (o *kubeObserver) Download(what string, total int64) (func(int64), func()) {
	t := o.progress.Transfer(what, total)
	return t.Update, t.End
}

func (o *kubeObserver) Node(name string) provision.NodeObserver {
	o.mu.Lock()
	o.busy++
	o.mu.Unlock()
	return &kubeNodeObserver{node: name, progress: o.progress, transfers: map[string]*ui.Transfer{}, done: func() {
		o.mu.Lock()
		o.busy--
		o.mu.Unlock()
	}}
}

// kubeNodeObserver shows one node's run: the plan, its steps and a
// transfer per staged file.
type kubeNodeObserver struct {
	node     string
	progress *ui.Progress

	mu        sync.Mutex
	transfers map[string]*ui.Transfer
	// done tells the kubeObserver that this node's run ended.
	done func()
}

func (o *kubeNodeObserver) Planned(plan *hotswap.Plan) {
	var b strings.Builder
	b.WriteString("plan:")
	for _, s := range plan.Steps {
		line := fmt.Sprintf("\n%-12s %-10s %s", s.Item.Name, s.Action, s.Reason)
		if s.Action == hotswap.ActionUpdate && s.Item.Source != nil {
			line += fmt.Sprintf(" (%s -> %s)", ui.Bytes(s.Item.Source.Size), s.Item.Destination)
		}
		b.WriteString(line)
	}
	if len(plan.Updates()) > 0 {
		fmt.Fprintf(&b, "\nstop %s; start %s", orNothing(plan.StopOrder), orNothing(plan.StartOrder))
	}
	o.progress.Step(o.node, "%s", b.String())
}

func orNothing(names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}

func (o *kubeNodeObserver) Step(msg string) { o.progress.Step(o.node, "%s", msg) }

func (o *kubeNodeObserver) Upload(item hotswap.Item) func(sent int64) {
	t := o.progress.Transfer(fmt.Sprintf("node %s: stage %s", o.node, item.Name), item.Source.Size)
	o.mu.Lock()
	o.transfers[item.Name] = t
	o.mu.Unlock()
	return t.Update
}

// End finishes transfers that did not complete (a failed upload).
func (o *kubeNodeObserver) End() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range o.transfers {
		t.End()
	}
	if o.done != nil {
		o.done()
		o.done = nil
	}
}
