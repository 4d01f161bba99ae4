// Package provision is the hot-swap workflow of DESIGN.md §4: inspect the
// node, plan, stage changed binaries beside their destinations while the
// services keep running, swap them in one op in dependency order, verify,
// and roll back or repair on failure.
//
// It talks to the node only through the Node interface and reports
// progress only through Observer: it never prints and never sees SSH.
package provision

import (
	"context"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"sigs.k8s.io/swdt/pkg/ops"
)

// Node is what the hot-swap needs from a node; *node.Node implements it.
type Node interface {
	InspectProvision(ctx context.Context, targets []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error)
	MkdirAll(ctx context.Context, remotePath string) error
	Upload(ctx context.Context, src io.ReaderAt, size int64, remotePath string, progress func(sent int64)) error
	HashFiles(ctx context.Context, paths []string) ([]ops.FileInfo, error)
	RemoveFiles(ctx context.Context, paths []string) ([]string, error)
	SwapServices(ctx context.Context, req ops.ServiceSwapRequest) (ops.ServiceSwapResponse, error)
	RecoverSwap(ctx context.Context, req ops.SwapRecoverRequest) (ops.SwapRecoverResponse, error)
	Lock(ctx context.Context, req ops.NodeLockRequest) (ops.NodeLockResponse, error)
	RenewLock(ctx context.Context, runID string, staged []string) error
	Unlock(ctx context.Context, runID string) error
}

// Observer is told what the run is doing. Implementations must be safe
// for concurrent use: uploads run in parallel.
type Observer interface {
	// Planned is called once with the plan, before anything changes.
	Planned(plan *Plan)
	// Step reports a phase starting, e.g. "stopping kube-proxy, kubelet".
	Step(msg string)
	// Upload reports an upload starting; the returned function receives
	// the bytes sent so far and is called a last time when it ends.
	Upload(item Item) func(sent int64)
}

// Options tune a run.
type Options struct {
	// Force replaces binaries even when they are unchanged.
	Force bool
	// DryRun stops after the plan.
	DryRun bool
	// StopTimeout is how long a service may take to stop before its
	// process is killed.
	StopTimeout time.Duration
	// StartTimeout is how long a service may take to reach Running.
	StartTimeout time.Duration
	// Settle is how long a started service must stay Running.
	Settle time.Duration
	// HealthTimeout is how long health checks are retried.
	HealthTimeout time.Duration
	// Parallel bounds concurrent uploads (0 means 4).
	Parallel int
	// BeforeSwap, when set, runs after staging and before any service
	// stops (pkg/wins stops orphaned host processes there). An error
	// fails the staged items and leaves every service running.
	BeforeSwap func(ctx context.Context) error
	// Abort, when done, gives up on a swap that is already running. A
	// cancelled run context does not: once services are stopped, the swap
	// runs to its end so that they are running again when Run returns.
	Abort context.Context
	// Observer receives progress; nil discards it.
	Observer Observer
	// Hashes remembers destinations' digests between runs; nil means
	// every destination is hashed on the node every run.
	Hashes HashCache
	// Transfer says how staged files travel (compressed, patched).
	Transfer Transfer
	// Command names the run in the node's lock ("swdt kubernetes").
	Command string
	// LockWait is how long to wait while another run holds the node's
	// lock (0 means DefaultLockWait).
	LockWait time.Duration
}

// Defaults for Options' durations.
const (
	DefaultStopTimeout   = 30 * time.Second
	DefaultStartTimeout  = 60 * time.Second
	DefaultSettle        = 2 * time.Second
	DefaultHealthTimeout = 30 * time.Second
)

func (o *Options) defaults() {
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Settle < 0 {
		o.Settle = 0
	}
	if o.HealthTimeout <= 0 {
		o.HealthTimeout = DefaultHealthTimeout
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if o.Abort == nil {
		o.Abort = context.Background()
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.Hashes == nil {
		o.Hashes = nopHashes{}
	}
	if o.Command == "" {
		o.Command = "swdt"
	}
	if o.LockWait <= 0 {
		o.LockWait = DefaultLockWait
	}
}

// Result is the outcome for one item.
type Result struct {
	// Name is the provisioner's name.
	Name string `json:"name"`
	// Action is unchanged, updated, rolled-back or failed (update in a dry
	// run).
	Action Action `json:"action"`
	// BytesSent is what was uploaded for this item: the bytes on the wire.
	BytesSent int64 `json:"bytesSent"`
	// FileSize is the size of the binary staged (0 when nothing was).
	FileSize int64 `json:"fileSize"`
	// Transfer is how it travelled: plain, compressed or patch.
	Transfer string `json:"transfer,omitempty"`
	// Duration is the time spent on the item, staging included.
	Duration time.Duration `json:"-"`
	// Downtime is how long the item's service was not running.
	Downtime time.Duration `json:"-"`
	// Error says what failed (empty on success).
	Error string `json:"error,omitempty"`
	// Detail is extra context: the plan's reason, a killed process, the
	// service's last exit code and events.
	Detail string `json:"detail,omitempty"`
}

// Failed reports whether the item did not end as planned.
func (r Result) Failed() bool { return r.Action == ActionFailed || r.Action == ActionRolledBack }

// Report is the outcome of a run on one node.
type Report struct {
	Plan    *Plan
	Results []Result
	// Repair is what the run did about an unfinished swap it found
	// (nil when there was none).
	Repair *Repair
	// Services are the services the swap stopped, the provisioners' own
	// and their dependents, in the order it stopped them, with how long
	// each was down (empty when nothing was swapped, or the swap op
	// failed and the node was repaired).
	Services []ServiceDowntime
}

// ServiceDowntime is how long one service the swap stopped was down.
type ServiceDowntime struct {
	// Service is the service's name.
	Service string
	// Downtime is from the start of its stop to its Running again; for a
	// service that is not Running at the end of the swap, up to the end
	// of the swap.
	Downtime time.Duration
	// Running is true when the service was Running at the end of the swap.
	Running bool
}

// Failures counts results that failed or were rolled back.
func (r *Report) Failures() int {
	n := 0
	for _, res := range r.Results {
		if res.Failed() {
			n++
		}
	}
	return n
}

// Run hot-swaps items into their services on n. It returns an error only
// when nothing could be decided (the node could not be inspected or
// locked, or an unfinished swap found on it could not be repaired);
// per-item failures are in the report.
//
// A run that changes the node holds the node's lock from before it
// inspects until it is done, and repairs an unfinished swap (the node's
// journal) before it plans. A dry run takes no lock and repairs nothing:
// its plan says what a run would repair.
func Run(ctx context.Context, n Node, items []Item, opts Options) (*Report, error) {
	opts.defaults()
	started := time.Now()
	owner := newOwner(opts.Command)
	items = slices.Clone(items)
	targets := make([]ops.ProvisionTarget, len(items))
	for i, it := range items {
		items[i].Force = it.Force || opts.Force
		items[i].runID = owner.RunID
		targets[i] = ops.ProvisionTarget{Service: it.Service, Destination: it.Destination, Known: opts.Hashes.Known(it.Destination)}
	}
	var lock *heldLock
	if !opts.DryRun {
		var err error
		if lock, err = lockNode(ctx, n, owner, opts); err != nil {
			return nil, err
		}
		defer lock.release()
	}
	inspect := func() (ops.ProvisionInspectResponse, error) {
		opts.Observer.Step("inspecting " + plural(len(items), "provisioner"))
		inspect, err := n.InspectProvision(ctx, targets)
		if err != nil {
			return inspect, fmt.Errorf("inspect: %w", err)
		}
		for i, f := range inspect.Files {
			if i < len(items) && !f.Cached {
				opts.Hashes.Remember(items[i].Destination, f)
			}
		}
		return inspect, nil
	}
	found, err := inspect()
	if err != nil {
		return nil, err
	}
	var repair *Repair
	if u := found.Unfinished; u != nil && !opts.DryRun {
		if repair, err = repairFirst(ctx, n, u, owner.RunID, opts); err != nil {
			return nil, err
		}
		if found, err = inspect(); err != nil {
			return nil, err
		}
	}
	plan, err := MakePlan(items, found)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	opts.Observer.Planned(plan)

	results := make([]Result, len(plan.Steps))
	index := map[string]int{}
	for i, s := range plan.Steps {
		results[i] = Result{Name: s.Item.Name, Action: s.Action, Detail: s.Reason}
		if s.Action == ActionFailed {
			results[i].Error, results[i].Detail = s.Reason, ""
		}
		index[s.Item.key()] = i
	}
	report := &Report{Plan: plan, Results: results, Repair: repair}
	updates := plan.Updates()
	if opts.DryRun || len(updates) == 0 {
		return report, nil
	}

	var paths []string
	for _, s := range updates {
		paths = append(paths, s.Item.Staged())
		if opts.Transfer.compresses() {
			paths = append(paths, s.Item.encoded())
		}
	}
	if err := lock.stage(ctx, paths); err != nil {
		return nil, err
	}
	staged, stagedInfo := stage(ctx, n, updates, results, index, opts)
	if len(staged) == 0 {
		finish(results, started)
		return report, nil
	}
	if ctx.Err() != nil {
		// Interrupted while staging: no service was touched yet.
		cleanupStaged(n, staged)
		markFailed(results, index, staged, "interrupted before the swap; no service was touched")
		finish(results, started)
		return report, nil
	}
	if opts.BeforeSwap != nil {
		if err := opts.BeforeSwap(ctx); err != nil {
			cleanupStaged(n, staged)
			markFailed(results, index, staged, "before the swap: "+err.Error()+"; no service was touched")
			finish(results, started)
			return report, nil
		}
	}
	var services []string
	for _, it := range staged {
		if plan.registered(it.Service) {
			services = append(services, it.Service)
		}
	}
	if err := plan.Reorder(services); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	report.Services = swap(ctx, n, plan, owner, staged, stagedInfo, results, index, opts)
	for _, it := range staged {
		// A rename keeps size and time: the destination is now what was
		// verified as staged.
		if results[index[it.key()]].Action == ActionUpdated {
			opts.Hashes.Remember(it.Destination, stagedInfo[it.key()])
		}
	}
	finish(results, started)
	return report, nil
}

// stage uploads every update to its staged name in parallel and
// verifies the digest on the node. It returns the items ready to swap and,
// by service, what the node reported of each staged file.
func stage(ctx context.Context, n Node, updates []Step, results []Result, index map[string]int, opts Options) ([]Item, map[string]ops.FileInfo) {
	opts.Observer.Step("staging " + plural(len(updates), "binary") + " while services keep running")
	var (
		mu    sync.Mutex
		ready []Item
		infos = map[string]ops.FileInfo{}
	)
	var g errgroup.Group
	g.SetLimit(opts.Parallel)
	for _, step := range updates {
		it := step.Item
		g.Go(func() error {
			info, sent, how, err := stageOne(ctx, n, it, step.Current, opts)
			mu.Lock()
			defer mu.Unlock()
			res := &results[index[it.key()]]
			res.BytesSent, res.FileSize, res.Transfer = sent, it.Source.Size, how
			if err != nil {
				res.Action, res.Error = ActionFailed, err.Error()
				return nil
			}
			ready = append(ready, it)
			infos[it.key()] = info
			return nil
		})
	}
	_ = g.Wait() // per-item errors are in results
	// Keep the plan's order so that output is stable.
	var ordered []Item
	for _, step := range updates {
		for _, it := range ready {
			if it.key() == step.Item.key() {
				ordered = append(ordered, it)
			}
		}
	}
	return ordered, infos
}

// stageOne puts it on the node as its staged file, verified, and returns
// what the node reported of it, the bytes sent and how (Transfer*).
func stageOne(ctx context.Context, n Node, it Item, current ops.FileInfo, opts Options) (ops.FileInfo, int64, string, error) {
	var read int64
	update := opts.Observer.Upload(it)
	defer func() { update(read) }()
	progress := func(s int64) { read = s; update(s) }
	// A destination that exists has its directory: no round trip for it.
	if !current.Exists {
		if err := n.MkdirAll(ctx, windowsDir(it.Destination)); err != nil {
			return ops.FileInfo{}, 0, "", fmt.Errorf("create %s: %w", windowsDir(it.Destination), err)
		}
	}
	if en, ok := n.(EncodingNode); ok && opts.Transfer.compresses() {
		return stageEncoded(ctx, n, en, it, current, opts, progress)
	}
	info, sent, err := stagePlain(ctx, n, it, progress)
	return info, sent, TransferPlain, err
}

func stagePlain(ctx context.Context, n Node, it Item, progress func(int64)) (ops.FileInfo, int64, error) {
	var sent int64
	f, err := it.Source.Open()
	if err != nil {
		return ops.FileInfo{}, 0, err
	}
	defer f.Close()
	err = n.Upload(ctx, f, it.Source.Size, it.Staged(), func(s int64) {
		sent = s
		progress(s)
	})
	if err != nil {
		return ops.FileInfo{}, sent, fmt.Errorf("stage %s: %w", it.Staged(), err)
	}
	files, err := n.HashFiles(ctx, []string{it.Staged()})
	if err != nil {
		return ops.FileInfo{}, sent, fmt.Errorf("verify %s: %w", it.Staged(), err)
	}
	if len(files) != 1 || !strings.EqualFold(files[0].SHA256, it.Source.SHA256) {
		got := "nothing"
		if len(files) == 1 {
			got = files[0].SHA256
		}
		removeQuietly(n, it.Staged())
		return ops.FileInfo{}, sent, fmt.Errorf("staged %s has SHA-256 %s, want %s; the upload was corrupted, run again", it.Staged(), got, it.Source.SHA256)
	}
	return files[0], sent, nil
}

// swap runs the swap op. It keeps going when ctx is cancelled (services
// are down: they must come back) and stops only when opts.Abort is done.
// It returns the downtime of every service the op stopped.
func swap(ctx context.Context, n Node, plan *Plan, owner ops.LockOwner, staged []Item, stagedInfo map[string]ops.FileInfo, results []Result, index map[string]int, opts Options) []ServiceDowntime {
	req := ops.ServiceSwapRequest{
		Owner:           owner,
		StopOrder:       plan.StopOrder,
		StartOrder:      plan.StartOrder,
		StopTimeoutMs:   int(opts.StopTimeout.Milliseconds()),
		StartTimeoutMs:  int(opts.StartTimeout.Milliseconds()),
		SettleMs:        int(opts.Settle.Milliseconds()),
		HealthTimeoutMs: int(opts.HealthTimeout.Milliseconds()),
	}
	for _, it := range staged {
		req.Items = append(req.Items, ops.SwapItem{
			Service: it.Service, Destination: it.Destination, Staged: it.Staged(), Backup: it.Backup(),
			HealthChecks: it.HealthChecks, SHA256: stagedInfo[it.key()].SHA256,
			OldSHA256: plan.current(it.Destination).SHA256,
		})
	}
	// The node bounds the op by the request's timings (node.SwapBudget).
	swapCtx, cancel := UntilAbort(ctx, opts.Abort)
	defer cancel()

	opts.Observer.Step(fmt.Sprintf("swapping: stop %s; start %s", listOrNone(plan.StopOrder), listOrNone(plan.StartOrder)))
	resp, err := n.SwapServices(swapCtx, req)
	if err != nil {
		repairAfter(ctx, n, req, staged, results, index, opts, err)
		return nil
	}
	killed := map[string]bool{}
	for _, k := range resp.Killed {
		killed[strings.ToLower(k)] = true
	}
	for _, r := range resp.Items {
		i, ok := index[strings.ToLower(r.Destination)]
		if !ok {
			continue
		}
		res := &results[i]
		res.Downtime = time.Duration(r.DowntimeMs) * time.Millisecond
		res.Detail = ""
		switch r.Result {
		case ops.SwapResultSwapped:
			res.Action = ActionUpdated
		case ops.SwapResultRolledBack:
			res.Action, res.Error = ActionRolledBack, r.Error
		default:
			res.Action, res.Error = ActionFailed, r.Error
		}
		var detail []string
		if killed[strings.ToLower(r.Service)] {
			detail = append(detail, fmt.Sprintf("the service did not stop within %s; its process was killed", opts.StopTimeout))
		}
		if r.ExitCode != 0 {
			detail = append(detail, fmt.Sprintf("service exit code %d", r.ExitCode))
		}
		detail = append(detail, r.Events...)
		res.Detail = strings.Join(detail, "; ")
	}
	for _, p := range resp.NotStarted {
		for _, it := range staged {
			if i := index[it.key()]; strings.EqualFold(it.Service, p.Service) && results[i].Error == "" {
				results[i].Action, results[i].Error = ActionFailed, p.Error
			}
		}
	}
	var down []ServiceDowntime
	for _, d := range resp.Downtime {
		down = append(down, ServiceDowntime{Service: d.Service, Downtime: time.Duration(d.DowntimeMs) * time.Millisecond, Running: d.Running})
	}
	return down
}

// repairAfter repairs the node after the swap op itself failed
// (connection lost, op error): swap-recover finishes or rolls back what
// the swap's journal records, and the report says which binary each
// service runs.
func repairAfter(ctx context.Context, n Node, req ops.ServiceSwapRequest, staged []Item, results []Result, index map[string]int, opts Options, cause error) {
	opts.Observer.Step("swap failed; repairing the node")
	var paths []string
	for _, it := range staged {
		paths = append(paths, it.Staged())
	}
	resp, err := recoverSwap(ctx, n, ops.SwapRecoverRequest{RunID: req.Owner.RunID, Staged: paths}, repairBudget(opts, len(req.StopOrder)+len(req.StartOrder)), opts)
	msg := "swap failed: " + cause.Error()
	switch {
	case err != nil:
		msg += "; repair failed too: " + err.Error() + "; run swdt again to repair the node, or check the services (Get-Service " + strings.Join(req.StartOrder, ",") + ")"
	case !resp.Found:
		msg += "; nothing had been changed on the node"
	default:
		// Each provisioner is told which binary its service runs now.
		for _, it := range staged {
			m := msg + "; repaired"
			for _, r := range resp.Items {
				if strings.EqualFold(r.Destination, it.Destination) {
					m += ": " + recoveredText(r)
				}
			}
			for _, p := range resp.NotStarted {
				if strings.EqualFold(p.Service, it.Service) {
					m += "; the service did not start: " + p.Error
				}
			}
			markFailed(results, index, []Item{it}, m)
		}
		return
	}
	markFailed(results, index, staged, msg)
}

// UntilAbort returns a context that outlives ctx's cancellation (a first
// Ctrl-C: services that were stopped must come back) and ends only when
// abort does (a second Ctrl-C) or cancel is called. ctx's values are kept
// and its deadline dropped.
func UntilAbort(ctx, abort context.Context) (context.Context, context.CancelFunc) {
	uctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if abort == nil {
		return uctx, cancel
	}
	stop := context.AfterFunc(abort, cancel)
	return uctx, func() {
		stop()
		cancel()
	}
}

func cleanupStaged(n Node, staged []Item) {
	for _, it := range staged {
		removeQuietly(n, it.Staged())
	}
}

// removeQuietly deletes a leftover staged file. It is best effort: a
// leftover .swdt-new is harmless and is replaced by the next run.
func removeQuietly(n Node, remotePath string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = n.RemoveFiles(ctx, []string{remotePath})
}

func markFailed(results []Result, index map[string]int, items []Item, msg string) {
	for _, it := range items {
		res := &results[index[it.key()]]
		res.Action, res.Error, res.Detail = ActionFailed, msg, ""
	}
}

// finish sets each changed result's duration: the whole run so far, since
// the items were staged in parallel and swapped together.
func finish(results []Result, started time.Time) {
	elapsed := time.Since(started)
	for i := range results {
		if results[i].Action != ActionUnchanged {
			results[i].Duration = elapsed
		}
	}
}

func windowsDir(p string) string {
	slashed := strings.ReplaceAll(p, `\`, "/")
	return strings.ReplaceAll(path.Dir(slashed), "/", `\`)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(word, "y"))
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}

type nopHashes struct{}

func (nopHashes) Known(string) *ops.FileInfo    { return nil }
func (nopHashes) Remember(string, ops.FileInfo) {}

type nopObserver struct{}

func (nopObserver) Planned(*Plan)                {}
func (nopObserver) Step(string)                  {}
func (nopObserver) Upload(Item) func(sent int64) { return func(int64) {} }
