// Package hotswap is the hot-swap engine of DESIGN.md §4, the one swap
// path of every workflow that puts a binary into a service (pkg/provision
// for swdt kubernetes, pkg/wins): inspect the
// node, plan, stage changed binaries beside their destinations while the
// services keep running, swap them in one op in dependency order, verify,
// and roll back or repair on failure.
//
// It talks to the node only through the Node interface and reports
// progress only through Observer: it never prints and never sees SSH.
package hotswap

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

	"sigs.k8s.io/swdt/pkg/hashcache"
	"sigs.k8s.io/swdt/pkg/ops"
)

// Node is what the hot-swap needs from a node; *node.Node implements it.
type Node interface {
	InspectProvision(ctx context.Context, targets []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error)
	// InspectLocked takes the node's swap lock and inspects under it, in
	// one op (only the lock's answer while another run holds it).
	InspectLocked(ctx context.Context, lock ops.NodeLockRequest, targets []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error)
	MkdirAll(ctx context.Context, remotePath string) error
	Upload(ctx context.Context, src io.ReaderAt, size int64, remotePath string, progress func(sent int64)) error
	RemoveFiles(ctx context.Context, paths []string) ([]string, error)
	SwapServices(ctx context.Context, req ops.ServiceSwapRequest) (ops.ServiceSwapResponse, error)
	RecoverSwap(ctx context.Context, req ops.SwapRecoverRequest) (ops.SwapRecoverResponse, error)
	RenewLock(ctx context.Context, runID string, staged []string) error
	Unlock(ctx context.Context, runID string) error
}

// uploadPreparer is a Node that can start what uploads need (the SFTP
// subsystem) while an op runs; *node.Node is one.
type uploadPreparer interface {
	PrepareUploads(ctx context.Context) error
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
	Hashes hashcache.Cache
	// Transfer says how staged files travel (compressed, patched).
	Transfer Transfer
	// Command names the run in the node's lock ("swdt kubernetes").
	Command string
	// LockWait is how long to wait while another run holds the node's
	// lock (0 means DefaultLockWait).
	LockWait time.Duration
	// Ahead is what Prepare started for this run before it reached the
	// node (nil: nothing).
	Ahead *Ahead
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
	// Registered is true when the run registered the item's service
	// (Item.Register).
	Registered bool `json:"registered,omitempty"`
	// Restarted is true when the run started or restarted the service
	// outside the swap (after registering it, or for Item.Restart).
	Restarted bool `json:"restarted,omitempty"`
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
// A run that changes the node takes the node's lock in the op that
// inspects, holds it until it is done (the swap op releases it), and
// repairs an unfinished swap (the node's journal) before it plans. A dry
// run takes no lock and repairs nothing: its plan says what a run would
// repair.
//
// Its round trips to the node are the lock and inspect op (the SFTP
// subsystem starts alongside it), the uploads (none for a small patch
// made ahead, which travels in the swap op's request), and the swap op,
// which decodes and verifies the staged files before it stops anything.
func Run(ctx context.Context, n Node, items []Item, opts Options) (*Report, error) {
	opts.defaults()
	started := time.Now()
	owner := newOwner(opts.Command)
	items = slices.Clone(items)
	targets := make([]ops.ProvisionTarget, len(items))
	// The files the run may stage, recorded in the lock as it is taken:
	// a run that breaks the lock after a crash removes them.
	var staged []string
	for i, it := range items {
		items[i].Force = it.Force || opts.Force
		items[i].runID = owner.RunID
		targets[i] = ops.ProvisionTarget{Service: it.Service, Destination: it.Destination, Known: opts.Hashes.Known(it.Destination)}
		staged = append(staged, items[i].Staged())
		if opts.Transfer.compresses() {
			staged = append(staged, items[i].encoded())
		}
	}
	remember := func(found ops.ProvisionInspectResponse) {
		for i, f := range found.Files {
			if i < len(items) && !f.Cached {
				opts.Hashes.Remember(items[i].Destination, f)
			}
		}
	}
	inspect := func() (ops.ProvisionInspectResponse, error) {
		opts.Observer.Step("inspecting " + plural(len(items), "provisioner"))
		inspect, err := n.InspectProvision(ctx, targets)
		if err != nil {
			return inspect, fmt.Errorf("inspect: %w", err)
		}
		remember(inspect)
		return inspect, nil
	}
	var (
		lock  *heldLock
		found ops.ProvisionInspectResponse
		err   error
	)
	if opts.DryRun {
		if found, err = inspect(); err != nil {
			return nil, err
		}
	} else {
		if p, ok := n.(uploadPreparer); ok {
			// Uploads wait for it; a failure shows in the upload.
			pctx, cancel := context.WithTimeout(ctx, lockOpLimit)
			prepared := make(chan struct{})
			go func() {
				defer close(prepared)
				defer cancel()
				_ = p.PrepareUploads(pctx)
			}()
			defer func() { <-prepared }()
		}
		opts.Observer.Step("inspecting " + plural(len(items), "provisioner"))
		if lock, found, err = lockAndInspect(ctx, n, owner, staged, targets, opts); err != nil {
			return nil, err
		}
		defer lock.release()
		remember(found)
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
	if opts.DryRun {
		return report, nil
	}
	if len(updates) == 0 {
		serviceSteps(ctx, n, plan, owner, results, index, opts)
		finish(results, started)
		return report, nil
	}

	ready, sent := stage(ctx, n, updates, found.MissingDirs, results, index, opts)
	if len(ready) == 0 {
		finish(results, started)
		return report, nil
	}
	if ctx.Err() != nil {
		// Interrupted while staging: no service was touched yet.
		cleanupStaged(n, ready, sent)
		markFailed(results, index, ready, "interrupted before the swap; no service was touched")
		finish(results, started)
		return report, nil
	}
	if opts.BeforeSwap != nil {
		if err := opts.BeforeSwap(ctx); err != nil {
			cleanupStaged(n, ready, sent)
			markFailed(results, index, ready, "before the swap: "+err.Error()+"; no service was touched")
			finish(results, started)
			return report, nil
		}
	}
	if err := reorder(plan, ready); err != nil {
		return nil, err
	}
	files, down := swap(ctx, n, plan, lock, owner, ready, sent, results, index, opts)
	report.Services = down
	serviceSteps(ctx, n, plan, owner, results, index, opts)
	for _, it := range ready {
		// A rename keeps size and time: the destination is now what the
		// swap verified as staged.
		if f, ok := files[it.key()]; ok && results[index[it.key()]].Action == ActionUpdated {
			opts.Hashes.Remember(it.Destination, f)
		}
	}
	finish(results, started)
	return report, nil
}

// reorder narrows the plan's stop and start orders to the services of
// the items to swap.
func reorder(plan *Plan, items []Item) error {
	var services []string
	for _, it := range items {
		if plan.registered(it.Service) {
			services = append(services, it.Service)
		}
	}
	if err := plan.Reorder(services); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	return nil
}

// upload is how an item's file went to the node: as it is (encoding
// empty), or as an encoded upload the swap op decodes into the staged
// file; data, when set, is that upload, not sent yet: it travels in the
// swap op's request.
type upload struct {
	encoding string
	data     []byte
}

// stage uploads every update to its staged name in parallel. It returns
// the items ready to swap and, by item, how each was sent. The node
// verifies them in the swap op, before it stops anything.
func stage(ctx context.Context, n Node, updates []Step, missingDirs []string, results []Result, index map[string]int, opts Options) ([]Item, map[string]upload) {
	opts.Observer.Step("staging " + plural(len(updates), "binary") + " while services keep running")
	var (
		mu    sync.Mutex
		ready []Item
		sent  = map[string]upload{}
	)
	var g errgroup.Group
	g.SetLimit(opts.Parallel)
	for _, step := range updates {
		it := step.Item
		needDir := slices.ContainsFunc(missingDirs, func(d string) bool { return strings.EqualFold(d, windowsDir(it.Destination)) })
		g.Go(func() error {
			how, wire, transfer, err := stageOne(ctx, n, it, step.Current, needDir, opts)
			mu.Lock()
			defer mu.Unlock()
			res := &results[index[it.key()]]
			res.BytesSent, res.FileSize, res.Transfer = wire, it.Source.Size, transfer
			if err != nil {
				res.Action, res.Error = ActionFailed, err.Error()
				return nil
			}
			ready = append(ready, it)
			sent[it.key()] = how
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
	return ordered, sent
}

// stageOne puts it on the node, as its staged file or as an encoded
// upload, and returns how, the bytes sent and the Transfer* name.
func stageOne(ctx context.Context, n Node, it Item, current ops.FileInfo, needDir bool, opts Options) (upload, int64, string, error) {
	var read int64
	update := opts.Observer.Upload(it)
	defer func() { update(read) }()
	progress := func(s int64) { read = s; update(s) }
	// The inspect said which directories are missing: no round trip for
	// the others.
	if needDir {
		if err := n.MkdirAll(ctx, windowsDir(it.Destination)); err != nil {
			return upload{}, 0, "", fmt.Errorf("create %s: %w", windowsDir(it.Destination), err)
		}
	}
	if en, ok := n.(EncodingNode); ok && opts.Transfer.compresses() {
		return stageEncoded(ctx, n, en, it, current, opts, progress)
	}
	opts.Ahead.stop() // files go as they are
	sent, err := stagePlain(ctx, n, it, progress)
	return upload{}, sent, TransferPlain, err
}

// stagePlain uploads it as it is to its staged name.
func stagePlain(ctx context.Context, n Node, it Item, progress func(int64)) (int64, error) {
	var sent int64
	f, err := it.Source.Open()
	if err != nil {
		return 0, err
	}
	defer f.Close()
	err = n.Upload(ctx, f, it.Source.Size, it.Staged(), func(s int64) {
		sent = s
		progress(s)
	})
	if err != nil {
		return sent, fmt.Errorf("stage %s: %w", it.Staged(), err)
	}
	return sent, nil
}

// swap runs the swap op, which decodes and verifies the staged files,
// swaps and releases the node's lock. When a patch did not decode on the
// node (damaged, or the file changed since the inspect), nothing was
// stopped: that file is sent again compressed and the op runs again. It
// keeps going when ctx is cancelled once services may be down (they must
// come back) and stops only when opts.Abort is done. It returns, by item,
// the binaries swapped in as the node verified them, and the downtime of
// every service the op stopped.
func swap(ctx context.Context, n Node, plan *Plan, lock *heldLock, owner ops.LockOwner, staged []Item, sent map[string]upload, results []Result, index map[string]int, opts Options) (map[string]ops.FileInfo, []ServiceDowntime) {
	// The node bounds the op by the request's timings (node.SwapBudget).
	swapCtx, cancel := UntilAbort(ctx, opts.Abort)
	defer cancel()
	for {
		req := swapRequest(plan, owner, staged, sent, opts)
		opts.Observer.Step(fmt.Sprintf("swapping: stop %s; start %s", listOrNone(plan.StopOrder), listOrNone(plan.StartOrder)))
		// The op renews the lock while it runs, and releases it.
		lock.pause()
		resp, err := n.SwapServices(swapCtx, req)
		if err != nil {
			lock.renew()
			finished := repairAfter(ctx, n, req, staged, sent, results, index, opts, err)
			if finished == nil {
				return nil, nil
			}
			// The op ran to its end on the node after all: its own answer
			// is the truth.
			resp = *finished
		}
		lock.released = resp.Unlocked
		if len(resp.Undecoded) == 0 {
			return swapped(resp, staged, results, index, opts), downtimes(resp)
		}
		lock.renew()
		if staged = resend(ctx, n, resp, staged, sent, results, index, opts); len(staged) == 0 {
			return nil, nil
		}
		if ctx.Err() != nil {
			cleanupStaged(n, staged, sent)
			markFailed(results, index, staged, "interrupted before the swap; no service was touched")
			return nil, nil
		}
		if err := reorder(plan, staged); err != nil {
			cleanupStaged(n, staged, sent)
			markFailed(results, index, staged, err.Error()+"; no service was touched")
			return nil, nil
		}
	}
}

// downtimes is the downtime of every service the swap op stopped.
func downtimes(resp ops.ServiceSwapResponse) []ServiceDowntime {
	var down []ServiceDowntime
	for _, d := range resp.Downtime {
		down = append(down, ServiceDowntime{Service: d.Service, Downtime: time.Duration(d.DowntimeMs) * time.Millisecond, Running: d.Running})
	}
	return down
}

// swapRequest is the swap op of the staged items: each with the digest
// its staged file must have and, when it went encoded, how to decode it.
func swapRequest(plan *Plan, owner ops.LockOwner, staged []Item, sent map[string]upload, opts Options) ops.ServiceSwapRequest {
	req := ops.ServiceSwapRequest{
		Owner:           owner,
		StopOrder:       plan.StopOrder,
		StartOrder:      plan.StartOrder,
		StopTimeoutMs:   int(opts.StopTimeout.Milliseconds()),
		StartTimeoutMs:  int(opts.StartTimeout.Milliseconds()),
		SettleMs:        int(opts.Settle.Milliseconds()),
		HealthTimeoutMs: int(opts.HealthTimeout.Milliseconds()),
		// The lock is kept when a register or restart step follows.
		Unlock: !plan.hasServiceSteps(),
	}
	for _, it := range staged {
		item := ops.SwapItem{
			Service: it.Service, Destination: it.Destination, Staged: it.Staged(), Backup: it.Backup(),
			HealthChecks: it.HealthChecks, SHA256: strings.ToLower(it.Source.SHA256),
			OldSHA256: plan.current(it.Destination).SHA256,
		}
		if u := sent[it.key()]; u.encoding != "" {
			item.Encoded, item.Encoding, item.Data = it.encoded(), u.encoding, u.data
			if u.encoding == ops.EncodingPatch {
				// A patch that fails is sent again compressed.
				item.Reference, item.Fallback = it.Destination, true
			}
		}
		req.Items = append(req.Items, item)
	}
	return req
}

// swapped reports the swap op's outcome in results and returns, by item,
// the binaries it swapped in.
func swapped(resp ops.ServiceSwapResponse, staged []Item, results []Result, index map[string]int, opts Options) map[string]ops.FileInfo {
	files := map[string]ops.FileInfo{}
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
			if r.File != nil {
				files[strings.ToLower(r.Destination)] = *r.File
			}
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
	return files
}

// resend handles a swap op that stopped because patches did not decode:
// the items it failed fail, each undecoded one is sent again compressed,
// and the others' staged files are decoded already. It returns the items
// still to swap.
func resend(ctx context.Context, n Node, resp ops.ServiceSwapResponse, staged []Item, sent map[string]upload, results []Result, index map[string]int, opts Options) []Item {
	failed := map[string]string{}
	for _, r := range resp.Items {
		failed[strings.ToLower(r.Destination)] = r.Error
	}
	undecoded := map[string]string{}
	for _, u := range resp.Undecoded {
		undecoded[strings.ToLower(u.Destination)] = u.Error
	}
	var (
		mu   sync.Mutex
		next []Item
		g    errgroup.Group
	)
	g.SetLimit(opts.Parallel)
	for _, it := range staged {
		res := &results[index[it.key()]]
		if why, ok := failed[it.key()]; ok {
			res.Action, res.Error, res.Detail = ActionFailed, why, ""
			continue
		}
		why, ok := undecoded[it.key()]
		if !ok {
			// Decoded into the staged file: it is staged as it is now.
			sent[it.key()] = upload{}
			next = append(next, it)
			continue
		}
		en, isEncoding := n.(EncodingNode)
		if !isEncoding {
			res.Action, res.Error, res.Detail = ActionFailed, why, ""
			continue
		}
		opts.Observer.Step(fmt.Sprintf("%s: the patch did not work (%s); sending the whole file", it.Name, why))
		g.Go(func() error {
			var read int64
			update := opts.Observer.Upload(it)
			wire, err := sendCompressed(ctx, en, it, opts, func(s int64) { read = s; update(s) })
			update(read)
			mu.Lock()
			defer mu.Unlock()
			res.BytesSent += wire
			res.Transfer = TransferCompressed
			if err != nil {
				res.Action, res.Error, res.Detail = ActionFailed, err.Error(), ""
				return nil
			}
			sent[it.key()] = upload{encoding: ops.EncodingZstd}
			next = append(next, it)
			return nil
		})
	}
	_ = g.Wait() // per-item errors are in results
	var ordered []Item
	for _, it := range staged {
		if slices.ContainsFunc(next, func(x Item) bool { return x.key() == it.key() }) {
			ordered = append(ordered, it)
		}
	}
	return ordered
}

// serviceSteps runs the optional steps of items after the swap: it
// registers and starts the services of items that asked for it, and
// restarts the services of items whose binary was unchanged but that asked
// for a restart. Items that failed are left alone.
func serviceSteps(ctx context.Context, n Node, plan *Plan, owner ops.LockOwner, results []Result, index map[string]int, opts Options) {
	for _, s := range plan.Steps {
		it := s.Item
		res := &results[index[it.key()]]
		switch {
		case res.Failed():
		case !s.Service.Exists && it.Register != nil:
			opts.Observer.Step("registering service " + it.Service)
			if err := it.Register(ctx); err != nil {
				res.Action, res.Error, res.Detail = ActionFailed, fmt.Sprintf("register %s: %v", it.Service, err), ""
				continue
			}
			res.Registered = true
			if err := restart(ctx, n, it, false, owner, opts); err != nil {
				res.Action, res.Error, res.Detail = ActionFailed, err.Error(), ""
				continue
			}
			res.Restarted = true
		case it.Restart && s.Service.Exists && res.Action == ActionUnchanged:
			if err := restart(ctx, n, it, isActive(s.Service.Status), owner, opts); err != nil {
				res.Action, res.Error, res.Detail = ActionFailed, err.Error(), ""
				continue
			}
			res.Restarted = true
		}
	}
}

// hasServiceSteps reports whether an item of the plan may register or
// restart its service after the swap.
func (p *Plan) hasServiceSteps() bool {
	for _, s := range p.Steps {
		if s.Item.Restart || (s.Item.Register != nil && !s.Service.Exists) {
			return true
		}
	}
	return false
}

// restart starts the item's service, stopping it first when it runs, with
// the swap's service op (no binary changes hands), and runs the item's
// StartChecks once it is up.
func restart(ctx context.Context, n Node, it Item, running bool, owner ops.LockOwner, opts Options) error {
	service := it.Service
	req := ops.ServiceSwapRequest{
		Owner:           owner,
		StartOrder:      []string{service},
		StopTimeoutMs:   int(opts.StopTimeout.Milliseconds()),
		StartTimeoutMs:  int(opts.StartTimeout.Milliseconds()),
		SettleMs:        int(opts.Settle.Milliseconds()),
		HealthTimeoutMs: int(opts.HealthTimeout.Milliseconds()),
	}
	if len(it.StartChecks) > 0 {
		req.ServiceChecks = map[string][]ops.HealthCheckSpec{service: it.StartChecks}
	}
	verb := "starting"
	if running {
		req.StopOrder, verb = []string{service}, "restarting"
	}
	opts.Observer.Step(verb + " " + service)
	// Once stopped, the service must come back even if ctx is cancelled
	// (a first Ctrl-C); a second one (opts.Abort) gives up. The op's own
	// timeouts bound it, and the node bounds the op (node.SwapBudget).
	sctx, cancel := UntilAbort(ctx, opts.Abort)
	defer cancel()
	resp, err := n.SwapServices(sctx, req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", verb, service, err)
	}
	if len(resp.NotStarted) > 0 {
		return fmt.Errorf("%s %s: %s", verb, service, resp.NotStarted[0].Error)
	}
	return nil
}

// repairAfter repairs the node after the swap op itself failed
// (connection lost, op error): swap-recover waits for the swap's agent if
// it still runs (it outlives a dropped connection), then finishes or
// rolls back what the swap's journal records, and the report says which
// binary each service runs. When the swap ran to a successful end after
// all, repairAfter returns its answer and reports nothing.
func repairAfter(ctx context.Context, n Node, req ops.ServiceSwapRequest, staged []Item, sent map[string]upload, results []Result, index map[string]int, opts Options, cause error) *ops.ServiceSwapResponse {
	opts.Observer.Step("swap failed; repairing the node")
	paths := stagedPaths(staged, sent)
	resp, err := recoverSwap(ctx, n, ops.SwapRecoverRequest{RunID: req.Owner.RunID, Staged: paths}, repairBudget(opts, len(req.StopOrder)+len(req.StartOrder)), opts)
	msg := "swap failed: " + cause.Error()
	switch {
	case err == nil && resp.Finished != nil && resp.Finished.Response != nil:
		opts.Observer.Step("the swap ran to its end on the node after the connection dropped; its result follows")
		return resp.Finished.Response
	case err == nil && resp.Finished != nil:
		msg = "swap failed: " + resp.Finished.Error
	}
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
		return nil
	}
	markFailed(results, index, staged, msg)
	return nil
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

// stagedPaths are the files the items left on the node: each staged file
// and, for an encoded upload not yet decoded, the upload.
func stagedPaths(staged []Item, sent map[string]upload) []string {
	var paths []string
	for _, it := range staged {
		paths = append(paths, it.Staged())
		if sent[it.key()].encoding != "" {
			paths = append(paths, it.encoded())
		}
	}
	return paths
}

func cleanupStaged(n Node, staged []Item, sent map[string]upload) {
	removeQuietly(n, stagedPaths(staged, sent)...)
}

// removeQuietly deletes leftover staged files. It is best effort: a
// leftover .swdt-new is harmless and is replaced by the next run.
func removeQuietly(n Node, remotePaths ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = n.RemoveFiles(ctx, remotePaths)
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
