package hotswap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/swdt/internal/binfmt"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/redact"
	"sigs.k8s.io/swdt/pkg/source"
)

// Item is one binary to put into one service: a kubernetes provisioner, or
// wins.exe for pkg/wins. Registering the service and restarting it are
// optional steps of an item, so that a binary whose service swdt creates
// (wins, csi-proxy) takes the same path as any other.
type Item struct {
	// Name is the provisioner's name as shown to the user.
	Name string
	// Service is the Windows service the binary feeds; "" for none (a
	// plain file push: staged, verified and renamed into place, nothing
	// stopped or started).
	Service string
	// Destination is the absolute Windows path of the binary.
	Destination string
	// Source is the resolved local file.
	Source *source.File
	// Force replaces the destination even when it holds the same bytes.
	Force bool
	// HealthChecks run after the service starts.
	HealthChecks []ops.HealthCheckSpec
	// Helper is a binary the service uses but does not run as its
	// program (containerd's shim): the service's program is not compared
	// with Destination.
	Helper bool
	// Register, when set, registers Service when the node does not have
	// it yet: the binary is put in place (no service stops or starts for
	// it), then Register runs and the service is started. Without it, a
	// missing service fails the item.
	Register func(ctx context.Context) error
	// Restart (re)starts the service even when its binary is unchanged,
	// for example after its config changed: a running service is stopped
	// and started, a stopped one started. A stopped service alone then
	// does not make the binary an update.
	Restart bool
	// StartChecks run when the register or restart step starts the
	// service (HealthChecks run after a swap). pkg/wins leaves them empty:
	// its verification report checks the bridge after every deploy.
	StartChecks []ops.HealthCheckSpec
	// Config is the service's configuration as the node file wants it
	// (register:). When the existing service's differs, the plan says
	// how (Step.Drift) and a run applies it with Reconfigure before the
	// swap, then restarts the service if the swap does not.
	Config      *ops.ServiceRegisterRequest
	Reconfigure func(ctx context.Context, req ops.ServiceRegisterRequest) error
	// ReplaceConfig lets Config take flags and dependencies away from the
	// existing service; without it the plan refuses such a change.
	ReplaceConfig bool

	// runID is the run's, set by Run: staged names are unique per run.
	runID string
}

// Staged is where Item's upload lands before the swap: a name of the
// run's own, so that two runs never write the same staged file.
func (it Item) Staged() string { return ops.StagedPath(it.Destination, it.runID) }

// key identifies an item within a run: its destination (unique in a node
// file; several items may feed one service).
func (it Item) key() string { return strings.ToLower(it.Destination) }

// Backup is where the old binary is kept during and after the swap.
func (it Item) Backup() string { return ops.BackupPath(it.Destination) }

// Action is what the plan does with an item.
type Action string

// Plan actions and final actions reported per item.
const (
	ActionUpdate     Action = "update"
	ActionUnchanged  Action = "unchanged"
	ActionUpdated    Action = "updated"
	ActionRolledBack Action = "rolled-back"
	ActionFailed     Action = "failed"
	// ActionReconfigure: the binary is unchanged but the service's
	// configuration differs from Item.Config; ActionReconfigured once the
	// run changed it and restarted the service.
	ActionReconfigure  Action = "reconfigure"
	ActionReconfigured Action = "reconfigured"
)

// Step is the plan for one item.
type Step struct {
	Item Item
	// Action is ActionUpdate, ActionUnchanged or ActionFailed.
	Action Action
	// Reason explains the action in a few words.
	Reason string
	// Current is the destination as it is on the node now.
	Current ops.FileInfo
	// Service is the state of the item's service now.
	Service ops.ServiceInfo
	// Drift says how the service's configuration differs from
	// Item.Config ("args: [--v=2] -> [--v=4]"); empty when it does not.
	// Previous is the configuration it has now, put back when the service
	// does not come up with the new one.
	Drift    []string
	Previous *ops.ServiceRegisterRequest
}

// Plan is what a run will do.
type Plan struct {
	Steps []Step
	// StopOrder lists services to stop, dependents first.
	StopOrder []string
	// StartOrder lists services to start afterwards, dependencies first.
	StartOrder []string

	services map[string]ops.ServiceInfo
}

func (p *Plan) registered(service string) bool {
	return p.services[strings.ToLower(service)].Exists
}

// current is what the inspect found at destination.
func (p *Plan) current(destination string) ops.FileInfo {
	for _, s := range p.Steps {
		if strings.EqualFold(s.Item.Destination, destination) {
			return s.Current
		}
	}
	return ops.FileInfo{}
}

// Reorder recomputes StopOrder and StartOrder for a subset of the updates,
// for when some items dropped out (for example a failed upload).
func (p *Plan) Reorder(services []string) error {
	changed := map[string]bool{}
	for _, s := range services {
		changed[strings.ToLower(s)] = true
	}
	stop, start, err := order(changed, p.services)
	if err != nil {
		return err
	}
	p.StopOrder, p.StartOrder = stop, start
	return nil
}

// Updates returns the steps that change the node.
func (p *Plan) Updates() []Step {
	var out []Step
	for _, s := range p.Steps {
		if s.Action == ActionUpdate {
			out = append(out, s)
		}
	}
	return out
}

// MakePlan compares items with what the node reported and orders the stops
// and starts by the node's own service dependencies.
func MakePlan(items []Item, inspect ops.ProvisionInspectResponse) (*Plan, error) {
	if len(inspect.Files) != len(items) {
		return nil, fmt.Errorf("inspect returned %d files for %d provisioners", len(inspect.Files), len(items))
	}
	services := make(map[string]ops.ServiceInfo, len(inspect.Services))
	for _, s := range inspect.Services {
		services[strings.ToLower(s.Name)] = s
	}
	plan := &Plan{services: services}
	changed := map[string]bool{}
	unfinished := map[string]bool{}
	if u := inspect.Unfinished; u != nil {
		for _, it := range u.Journal.Request.Items {
			unfinished[strings.ToLower(it.Destination)] = true
		}
	}
	for i, it := range items {
		step := Step{Item: it, Current: inspect.Files[i], Service: services[strings.ToLower(it.Service)]}
		switch {
		case it.Service == "":
			step.Action, step.Reason = fileOnly(it, step.Current, unfinished[strings.ToLower(it.Destination)], inspect.Unfinished)
		case !step.Service.Exists && it.Register != nil && !step.Current.Exists:
			step.Action, step.Reason = ActionUpdate, "not on the node yet; service not registered"
		case !step.Service.Exists && it.Register != nil && !strings.EqualFold(step.Current.SHA256, it.Source.SHA256):
			step.Action, step.Reason = ActionUpdate, "content differs; service not registered"
		case !step.Service.Exists && it.Register != nil:
			step.Action, step.Reason = ActionUnchanged, "same SHA-256; service not registered"
		case !step.Service.Exists:
			step.Action = ActionFailed
			step.Reason = fmt.Sprintf("service %q is not registered on the node; nothing was changed: add register: (args, startType) to provisioner %s in the node file and swdt creates the service to run %s", it.Service, it.Name, it.Destination)
		case step.Service.StartType == "Disabled":
			step.Action = ActionFailed
			step.Reason = fmt.Sprintf("service %q is disabled; enable it with Set-Service -Name %s -StartupType Automatic", it.Service, it.Service)
		case !it.Helper && runsOther(step.Service, it.Destination) != "":
			step.Action, step.Reason = ActionFailed, runsOther(step.Service, it.Destination)
		case unfinished[strings.ToLower(it.Destination)] && inspect.Unfinished.InProgress:
			step.Action, step.Reason = ActionUpdate, "another run is swapping it now"
		case unfinished[strings.ToLower(it.Destination)]:
			step.Action, step.Reason = ActionUpdate, "an interrupted swap left it unverified; a run repairs that swap first"
		case !step.Current.Exists:
			step.Action, step.Reason = ActionUpdate, "not on the node yet"
		case !strings.EqualFold(step.Current.SHA256, it.Source.SHA256):
			step.Action, step.Reason = ActionUpdate, "content differs"
		case !isActive(step.Service.Status) && !it.Restart:
			step.Action, step.Reason = ActionUpdate, fmt.Sprintf("same SHA-256, but the service is %s; the swap starts it", step.Service.Status)
		case it.Force:
			step.Action, step.Reason = ActionUpdate, "same content, forced"
		default:
			step.Action, step.Reason = ActionUnchanged, "same SHA-256"
		}
		if step.Action == ActionUpdate {
			if err := checkProgram(it, inspect.Arch); err != nil {
				step.Action, step.Reason = ActionFailed, err.Error()+"; nothing was sent"
				plan.Steps = append(plan.Steps, step)
				continue
			}
		}
		if drift := inspect.Drift[i]; len(drift) > 0 && step.Service.Exists && it.Reconfigure != nil && step.Action != ActionFailed {
			step.Drift = drift
			if prev, ok := inspect.Current[i]; ok {
				step.Previous = &prev
				if dropped := droppedConfig(prev, *it.Config); dropped != "" && !it.ReplaceConfig {
					step.Action = ActionFailed
					step.Reason = fmt.Sprintf("service %s runs with %s, which register would take away (%s): register.args and dependsOn are the whole lists, so add them there, "+
						"or set register.replace: true (or run with --force) to replace them; the service was left as it is", it.Service, dropped, strings.Join(drift, "; "))
					plan.Steps = append(plan.Steps, step)
					continue
				}
			}
			why := "service config differs: " + strings.Join(drift, "; ")
			if step.Action == ActionUnchanged {
				step.Action, step.Reason = ActionReconfigure, why
			} else {
				step.Reason += "; " + why
			}
		}
		if step.Action == ActionUpdate && step.Service.Exists {
			// Several provisioners may feed one service: one stop and
			// start for all of them.
			changed[strings.ToLower(step.Service.Name)] = true
		}
		plan.Steps = append(plan.Steps, step)
	}
	var updates []string
	for name := range changed {
		updates = append(updates, name)
	}
	if err := plan.Reorder(updates); err != nil {
		return nil, err
	}
	return plan, nil
}

// checkProgram refuses an item's build that cannot run on the node: a
// program for another OS, or a PE image for another architecture than
// arch (the node's; "" accepts amd64 and arm64). It applies to a
// service's binary and to any destination ending in .exe; a build whose
// file cannot be read is left to the upload to report.
func checkProgram(it Item, arch string) error {
	if it.Source == nil || it.Source.Path == "" || (it.Service == "" && !strings.HasSuffix(strings.ToLower(it.Destination), ".exe")) {
		return nil
	}
	err := binfmt.CheckWindows(it.Source.Path, arch)
	var nw *binfmt.NotForWindowsError
	if errors.As(err, &nw) {
		nw.Path = "its build " + redact.URLs(it.Source.Ref)
		return nw
	}
	return nil
}

// fileOnly plans an item that feeds no service (a plain file push): it is
// replaced when its content differs, and nothing stops or starts for it.
func fileOnly(it Item, current ops.FileInfo, journaled bool, u *ops.UnfinishedSwap) (Action, string) {
	switch {
	case journaled && u != nil && u.InProgress:
		return ActionUpdate, "another run is swapping it now"
	case journaled:
		return ActionUpdate, "an interrupted swap left it unverified; a run repairs that swap first"
	case !current.Exists:
		return ActionUpdate, "not on the node yet; no service"
	case !strings.EqualFold(current.SHA256, it.Source.SHA256):
		return ActionUpdate, "content differs; no service"
	case it.Force:
		return ActionUpdate, "same content, forced; no service"
	}
	return ActionUnchanged, "same SHA-256; no service"
}

// order computes which services stop and start around the swap of the
// changed ones. Every running service that depends on a changed one,
// transitively, is stopped first and started again last; a changed service
// is started even when it was not running (that is what its provisioner
// asks for); a stopped dependent stays stopped.
func order(changed map[string]bool, services map[string]ops.ServiceInfo) (stop, start []string, err error) {
	involved := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if involved[name] {
			return
		}
		involved[name] = true
		for _, d := range services[name].Dependents {
			dep := strings.ToLower(d)
			if isActive(services[dep].Status) {
				visit(dep)
			}
		}
	}
	for name := range changed {
		visit(name)
	}
	// Topological order with dependencies first; ties broken by name so
	// that plans are stable.
	indegree := map[string]int{}
	for name := range involved {
		indegree[name] += 0
		for _, d := range services[name].DependsOn {
			if involved[strings.ToLower(d)] {
				indegree[name]++
			}
		}
	}
	var ready, sorted []string
	for name, n := range indegree {
		if n == 0 {
			ready = append(ready, name)
		}
	}
	for len(ready) > 0 {
		sort.Strings(ready)
		name := ready[0]
		ready = ready[1:]
		sorted = append(sorted, name)
		for _, d := range services[name].Dependents {
			dep := strings.ToLower(d)
			if !involved[dep] {
				continue
			}
			indegree[dep]--
			if indegree[dep] == 0 {
				ready = append(ready, dep)
			}
		}
	}
	if len(sorted) != len(involved) {
		return nil, nil, fmt.Errorf("the node's service dependencies form a cycle among %s", strings.Join(keys(involved), ", "))
	}
	for i := len(sorted) - 1; i >= 0; i-- {
		if s := services[sorted[i]]; isActive(s.Status) {
			stop = append(stop, s.Name)
		}
	}
	for _, name := range sorted {
		if s := services[name]; changed[name] || isActive(s.Status) {
			start = append(start, s.Name)
		}
	}
	return stop, start, nil
}

func isActive(status string) bool {
	switch status {
	case "Running", "StartPending", "ContinuePending", "Paused", "PausePending":
		return true
	}
	return false
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// runsOther says why a service does not run destination, the file a
// provisioner replaces: swapping it would change nothing the service
// runs. It is "" when the service runs destination, or when what it runs
// cannot be told (a wrapper whose program is not recorded).
func runsOther(svc ops.ServiceInfo, destination string) string {
	if svc.Runs(destination) {
		return ""
	}
	via := ""
	if svc.Wrapper != "" {
		via = " (through " + svc.Wrapper + ")"
	}
	return fmt.Sprintf("service %q runs %s%s, not the destination %s: replacing the destination would not change what it runs; "+
		"set destination to %s, or point the service at %s first", svc.Name, svc.Executable, via, destination, svc.Executable, destination)
}

// droppedConfig names the flags (by name: --v=2 and --v=4 are one flag)
// and dependencies of the service as it is (prev) that want lacks, "" when
// it lacks none.
func droppedConfig(prev, want ops.ServiceRegisterRequest) string {
	kept := map[string]bool{}
	for _, a := range want.Args {
		if name, ok := flagName(a); ok {
			kept[name] = true
		}
	}
	var dropped []string
	for _, a := range prev.Args {
		if name, ok := flagName(a); ok && !kept[name] {
			kept[name] = true // once
			dropped = append(dropped, "flag "+a)
		}
	}
	for _, d := range prev.DependsOn {
		if !slices.ContainsFunc(want.DependsOn, func(w string) bool { return strings.EqualFold(w, d) }) {
			dropped = append(dropped, "dependency "+d)
		}
	}
	return strings.Join(dropped, ", ")
}

// flagName is the name of a command-line flag (--config=x and --config
// name one), and whether arg is a flag at all.
func flagName(arg string) (string, bool) {
	if !strings.HasPrefix(arg, "-") || strings.Trim(arg, "-") == "" {
		return "", false
	}
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name, true
}
