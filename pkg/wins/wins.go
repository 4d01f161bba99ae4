// Package wins is the `swdt wins` workflow of DESIGN.md §5: deploy
// rancher/wins on a node and verify its named-pipe bridge.
//
// wins.exe itself goes through the hot-swap of pkg/hotswap (stage, swap,
// health checks, rollback); this package adds what is particular to wins:
// its config file, stopping its orphaned host processes before the swap,
// registering the service, and the verification report. It talks to the
// node only through Node and reports progress only through the
// hotswap.Observer it is given: it never prints and never sees SSH.
package wins

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/source"
	"sigs.k8s.io/swdt/pkg/target"
)

// Node is what the workflow needs from a node; *node.Node implements it.
type Node interface {
	hotswap.Node
	InspectWins(ctx context.Context, configPath string) (ops.WinsInspectResponse, error)
	WriteWinsConfig(ctx context.Context, path, content string) (ops.WinsConfigWriteResponse, error)
	RegisterWins(ctx context.Context, req ops.WinsRegisterRequest) (ops.WinsRegisterResponse, error)
	StopWinsOrphans(ctx context.Context) ([]ops.Process, error)
	VerifyWins(ctx context.Context, req ops.WinsVerifyRequest) (ops.WinsVerifyResponse, error)
	UninstallWins(ctx context.Context, binary, configPath string) (ops.WinsUninstallResponse, error)
}

// Action is what a deploy did (or, in a dry run, would do).
type Action string

// Deploy actions. The first group is reported after a run, the second by
// a dry run.
const (
	ActionInstalled    Action = "installed"
	ActionUpdated      Action = "updated"
	ActionReconfigured Action = "reconfigured"
	ActionStarted      Action = "started"
	ActionUnchanged    Action = "unchanged"
	ActionRolledBack   Action = "rolled-back"
	ActionFailed       Action = "failed"

	ActionInstall     Action = "install"
	ActionUpdate      Action = "update"
	ActionReconfigure Action = "reconfigure"
	ActionStart       Action = "start"
)

// Deployment reports what a deploy did on one node.
type Deployment struct {
	Action Action `json:"action"`
	// Binary is the hot-swap's action for wins.exe.
	Binary hotswap.Action `json:"binary"`
	// ConfigChanged is true when the config file was (or would be)
	// rewritten; ConfigBackup is where the previous one was kept.
	ConfigChanged bool   `json:"configChanged"`
	ConfigBackup  string `json:"configBackup,omitempty"`
	// Registered is true when the service was registered by this run.
	Registered bool `json:"registered"`
	// Restarted is true when the service was started or restarted outside
	// the swap (after registering it, or for a new config).
	Restarted bool `json:"restarted"`
	// StoppedOrphans counts rancher-wins-* processes stopped before the
	// swap.
	StoppedOrphans int   `json:"stoppedOrphans"`
	BytesSent      int64 `json:"bytesSent"`
	DowntimeMs     int64 `json:"downtimeMs"`
	// Error says what failed; Detail adds context.
	Error  string `json:"error,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Removal reports what an uninstall removed.
type Removal struct {
	// ServiceRemoved is true when the service was registered before.
	ServiceRemoved bool `json:"serviceRemoved"`
	// Removed lists the files deleted.
	Removed []string `json:"removed"`
	// ConfigBackup is where the config was kept ("" when there was none).
	ConfigBackup string `json:"configBackup,omitempty"`
	// StoppedProcesses counts rancher-wins-* processes stopped.
	StoppedProcesses int `json:"stoppedProcesses"`
}

// Report is the outcome on one node.
type Report struct {
	// Deploy is set by Deploy.
	Deploy *Deployment `json:"deploy,omitempty"`
	// Uninstall is set by Uninstall.
	Uninstall *Removal `json:"uninstall,omitempty"`
	// Checks is the verification report (empty in a dry run and after an
	// uninstall).
	Checks []Check `json:"checks"`
}

// Failed reports whether the deploy failed or was rolled back, or a check
// failed.
func (r *Report) Failed() bool {
	if r.Deploy != nil && (r.Deploy.Action == ActionFailed || r.Deploy.Action == ActionRolledBack) {
		return true
	}
	for _, c := range r.Checks {
		if !c.OK {
			return true
		}
	}
	return false
}

// Options tune Deploy.
type Options struct {
	// Deep adds the deep check: a whitelisted process run through the
	// pipe.
	Deep bool
	// DryRun stops after the plan: nothing on the node changes.
	DryRun bool
	// Resolver resolves spec.wins.sourceURL; nil means the default cache.
	Resolver *source.Resolver
	// Swap tunes the hot-swap of wins.exe (timeouts, Observer). Its
	// DryRun and BeforeSwap are set by Deploy.
	Swap hotswap.Options
}

// Deploy puts wins on the node as spec describes and verifies the bridge:
// write the config when it changed, hot-swap wins.exe (stopping orphaned
// host processes first; health checks roll a broken wins back), register
// the service when it is missing, (re)start it when needed, then verify.
// It returns an error only when nothing could be decided (the source or
// the node could not be read); failures after that are in the report.
func Deploy(ctx context.Context, n Node, spec *v1alpha1.WinsSpec, opts Options) (*Report, error) {
	if spec == nil {
		return nil, errors.New("the node has no spec.wins")
	}
	p := PathsFor(spec)
	content, err := RenderConfig(spec, p)
	if err != nil {
		return nil, err
	}
	resolver := opts.Resolver
	if resolver == nil {
		resolver = &source.Resolver{}
	}
	observe := observer(opts.Swap.Observer)
	src, err := resolver.ResolveBinary(ctx, target.Wins(spec).Source(), nil)
	if err != nil {
		return nil, fmt.Errorf("wins: %w", err)
	}
	observe.Step("inspecting wins")
	inspect, err := n.InspectWins(ctx, p.Config)
	if err != nil {
		return nil, fmt.Errorf("inspect wins: %w", err)
	}
	registered := inspect.Service.Exists
	d := &Deployment{ConfigChanged: !inspect.ConfigExists || inspect.ConfigContent != content}
	report := &Report{Deploy: d, Checks: []Check{}}

	swapOpts := opts.Swap
	swapOpts.DryRun = opts.DryRun
	if swapOpts.Command == "" {
		swapOpts.Command = "swdt wins"
	}
	swapOpts.BeforeSwap = func(ctx context.Context) error {
		stopped, err := n.StopWinsOrphans(ctx)
		d.StoppedOrphans = len(stopped)
		if err != nil {
			return fmt.Errorf("stop orphaned %s* processes: %w", ops.WinsProcessPrefix, err)
		}
		return nil
	}
	running := inspect.Service.Status == "Running"
	bin := target.Wins(spec)
	// wins registers its own service (wins.exe srv app run --register),
	// with the config swdt wrote; a new config or a stopped service needs
	// a restart even when wins.exe is unchanged.
	item := hotswap.Item{Name: bin.Name, Service: bin.Service, Destination: bin.Destination, Source: src,
		HealthChecks: bin.HealthChecks, Restart: d.ConfigChanged || !running,
		Register: func(ctx context.Context) error {
			_, err := n.RegisterWins(ctx, ops.WinsRegisterRequest{Binary: p.Binary, ConfigPath: p.Config})
			return err
		}}

	if opts.DryRun {
		res, err := hotswap.Run(ctx, n, []hotswap.Item{item}, swapOpts)
		if err != nil {
			return nil, fmt.Errorf("plan wins.exe: %w", err)
		}
		r := res.Results[0]
		d.Binary, d.Detail = r.Action, r.Detail
		switch {
		case r.Action == hotswap.ActionFailed:
			d.Action, d.Error, d.Detail = ActionFailed, r.Error, ""
		case !registered:
			d.Action = ActionInstall
		case r.Action == hotswap.ActionUpdate:
			d.Action = ActionUpdate
		case d.ConfigChanged:
			d.Action = ActionReconfigure
		case !running:
			d.Action = ActionStart
		default:
			d.Action = ActionUnchanged
		}
		return report, nil
	}

	if d.ConfigChanged {
		observe.Step("writing " + p.Config)
		w, err := n.WriteWinsConfig(ctx, p.Config, content)
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", p.Config, err)
		}
		d.ConfigBackup = w.Backup
		for _, note := range w.Notes {
			observe.Step(note)
		}
	}
	res, err := hotswap.Run(ctx, n, []hotswap.Item{item}, swapOpts)
	if err != nil {
		return nil, fmt.Errorf("hot-swap wins.exe: %w", err)
	}
	r := res.Results[0]
	d.Binary, d.BytesSent, d.DowntimeMs, d.Detail = r.Action, r.BytesSent, r.Downtime.Milliseconds(), r.Detail
	d.Registered, d.Restarted = r.Registered, r.Restarted
	switch {
	case r.Action == hotswap.ActionRolledBack:
		d.Action, d.Error = ActionRolledBack, r.Error
	case r.Action == hotswap.ActionFailed:
		d.Action, d.Error = ActionFailed, r.Error
	case r.Registered:
		d.Action = ActionInstalled
	case r.Action == hotswap.ActionUpdated:
		d.Action = ActionUpdated
	case r.Restarted && d.ConfigChanged:
		d.Action = ActionReconfigured
	case r.Restarted:
		d.Action = ActionStarted
	default:
		d.Action = ActionUnchanged
	}
	// A wins without the bridge fails its pipe health checks.
	var sf *hotswap.SwapFailure
	if errors.As(r.Err, &sf) && (sf.MissingPipe(ops.WinsPipe) || sf.MissingPipe(ops.WinsProxyPipe)) {
		d.Error += "; " + NoBridgeAdvice
	}
	if ctx.Err() != nil {
		// Interrupted: the deploy is reported, the bridge left unchecked.
		report.Checks = []Check{{Name: CheckVerify, Detail: "not checked: interrupted; run swdt wins verify to check the bridge"}}
		return report, nil
	}
	observe.Step("verifying the bridge")
	checks, err := verify(ctx, n, p, opts.Deep)
	if err != nil {
		// The deploy is done and must be reported; the verification's
		// failure is a failed check, not "nothing could be done".
		checks = []Check{{Name: CheckVerify, Detail: err.Error() + "; run swdt wins verify to check again"}}
	}
	report.Checks = checks
	return report, nil
}

// Verify checks the bridge without changing anything on the node (the
// deep check places and removes its own smoke copy). spec may be nil: the
// default paths are checked.
func Verify(ctx context.Context, n Node, spec *v1alpha1.WinsSpec, deep bool) (*Report, error) {
	checks, err := verify(ctx, n, PathsFor(spec), deep)
	if err != nil {
		return nil, err
	}
	return &Report{Checks: checks}, nil
}

func verify(ctx context.Context, n Node, p Paths, deep bool) ([]Check, error) {
	resp, err := n.VerifyWins(ctx, ops.WinsVerifyRequest{Binary: p.Binary, Deep: deep, SmokePath: p.Smoke})
	if err != nil {
		return nil, fmt.Errorf("verify wins: %w", err)
	}
	return Checks(resp, p, deep), nil
}

// Uninstall stops and unregisters the service, stops wins' host
// processes, and removes the binary and the config (kept as
// <config>.swdt-bak). spec may be nil: the default paths are removed.
func Uninstall(ctx context.Context, n Node, spec *v1alpha1.WinsSpec) (*Report, error) {
	p := PathsFor(spec)
	resp, err := n.UninstallWins(ctx, p.Binary, p.Config)
	if err != nil {
		return nil, fmt.Errorf("uninstall wins: %w", err)
	}
	return &Report{Checks: []Check{}, Uninstall: &Removal{ServiceRemoved: resp.ServiceRemoved, Removed: resp.Removed,
		ConfigBackup: resp.ConfigBackup, StoppedProcesses: len(resp.Stopped)}}, nil
}

func observer(o hotswap.Observer) hotswap.Observer {
	if o == nil {
		return nopObserver{}
	}
	return o
}

type nopObserver struct{}

func (nopObserver) Planned(*hotswap.Plan)                {}
func (nopObserver) Step(string)                          {}
func (nopObserver) Upload(hotswap.Item) func(sent int64) { return func(int64) {} }
