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
	"log/slog"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/words"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/hashcache"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
)

// Node is what the hot-swap needs from a node; *node.Node implements it.
// Capabilities says which of its optional paths the run may take: the
// methods behind one the node lacks are not called. A wrapper that embeds
// a Node forwards them all.
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
	// PrepareAgent checks (or delivers) the agent ahead of the first op,
	// while the run gets that op ready.
	PrepareAgent(ctx context.Context) error

	// Capabilities says what the node can do beyond the methods above.
	Capabilities() node.Capabilities
	// Logger is the node's log: the run says there (-v) which paths it
	// can take.
	Logger() *slog.Logger

	// With Capabilities().Encoding: compressed and patched uploads, the
	// swap op decoding them, chosen by the link's round trip (when
	// Capabilities().LinkRTT; WaitLinkRTT waits for its measure).
	UploadStream(ctx context.Context, open func() (io.ReadCloser, error), remotePath string, progress func(sent int64)) (int64, error)
	LinkRTT() (time.Duration, bool)
	WaitLinkRTT(ctx context.Context) (time.Duration, bool)
	// With Capabilities().Attachments: the patches of a run in one op
	// follow its request as they are made, and the node decodes them as
	// they arrive.
	SwapServicesAttached(ctx context.Context, req ops.ServiceSwapRequest, attachments io.Reader) (ops.ServiceSwapResponse, error)
	// With Capabilities().OpsAhead: the first op's channel opens, and an
	// op starts, before its request is ready (while the patches made
	// ahead finish).
	PrepareSession()
	PrepareOp(name string)
	// With Capabilities().UploadsAhead: what uploads need (the SFTP
	// subsystem) starts while an op runs.
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

// SwapObserver is an Observer that is also told when the node's services
// are about to change (a reconfiguration or the swap itself): before
// that, an interrupt changes nothing; from then on the first one lets the
// swap finish.
type SwapObserver interface {
	Observer
	Swapping()
}

// swapping tells o, when it is a SwapObserver, that the services are about
// to change.
func swapping(o Observer) {
	if s, ok := o.(SwapObserver); ok {
		s.Swapping()
	}
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
	// fails the staged items and leaves every service running. A run
	// with it does not go in one op.
	BeforeSwap func(ctx context.Context) error
	// ReadBeforeSwap, when set, runs just before BeforeSwap, as it does,
	// and only reads (the cluster's Node before a kubelet swap): a run
	// with it may still go in one op, the hook running before the op is
	// sent, and again when the node refuses the op and the run takes the
	// usual way.
	ReadBeforeSwap func(ctx context.Context) error
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
	// Knowledge is what earlier runs of this process learned of the node
	// (--watch; nil: nothing): with it a rebuild may go in one op
	// (fold.go).
	Knowledge *Knowledge
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
	// Err is Error as an error: an *ItemError, a *SwapFailure, or the
	// error of an upload, an op or a hook (nil on success).
	Err error `json:"-"`
	// Registered is true when the run registered the item's service
	// (Item.Register).
	Registered bool `json:"registered,omitempty"`
	// Restarted is true when the run started or restarted the service
	// outside the swap (after registering it, or for Item.Restart).
	Restarted bool `json:"restarted,omitempty"`
	// Reconfigured is true when the run changed the service's
	// configuration to Item.Config's.
	Reconfigured bool `json:"reconfigured,omitempty"`
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
		targets[i] = ops.ProvisionTarget{Service: it.Service, Destination: it.Destination, Known: opts.Hashes.Known(it.Destination), Register: it.Config}
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
		opts.Observer.Step("inspecting " + words.Count(len(items), "provisioner"))
		inspect, err := n.InspectProvision(ctx, targets)
		if err != nil {
			return inspect, fmt.Errorf("inspect: %w", err)
		}
		remember(inspect)
		return inspect, nil
	}
	caps := n.Capabilities()
	if !caps.Encoding || opts.Transfer.plain(n.LinkRTT()) {
		// Connected on a link files go as they are over: the patches made
		// ahead and the copies for the next patch stop now, not when
		// staging starts.
		opts.Ahead.stop()
	}
	var (
		lock  *heldLock
		found ops.ProvisionInspectResponse
		err   error
	)
	if opts.DryRun {
		if found, err = inspect(); err != nil {
			return nil, Interrupted(ctx, "during the inspect", err)
		}
	} else {
		if caps.UploadsAhead {
			// Uploads wait for it; a failure shows in the upload.
			pctx, cancel := context.WithTimeout(ctx, lockOpLimit)
			prepared := make(chan struct{})
			go func() {
				defer close(prepared)
				defer cancel()
				_ = n.PrepareUploads(pctx)
			}()
			defer func() { <-prepared }()
		}
		// A rebuild that may go in one op: whether its patches are small
		// enough is known once they are made.
		plan := foldCandidate(n, items, targets, opts)
		logPaths(n, caps, opts, plan)
		if caps.OpsAhead {
			// On a kept connection (--watch) the first op's channel opens
			// while its patch is made.
			n.PrepareSession()
		}
		// A failure shows again in the first op.
		checked := make(chan struct{})
		go func() {
			defer close(checked)
			if n.PrepareAgent(ctx) == nil && plan != nil && caps.OpsAhead {
				// The swap op starts on the node; its request follows
				// once the patches are made.
				n.PrepareOp(ops.ServiceSwap.Name)
			}
		}()
		defer func() { <-checked }()
		if plan != nil && (caps.Attachments || inlinePatches(plan, opts)) {
			dests := make([]string, len(targets))
			for i, t := range targets {
				dests[i] = t.Destination
			}
			lockReq := ops.NodeLockRequest{Owner: owner, StaleAfterMs: LockStaleAfter.Milliseconds(), Staged: staged, Destinations: dests}
			if report, ok := runFolded(ctx, n, plan, lockReq, opts, started, caps.Attachments); ok {
				return report, nil
			}
		}
		opts.Observer.Step("inspecting " + words.Count(len(items), "provisioner"))
		if lock, found, err = lockAndInspect(ctx, n, owner, staged, targets, opts); err != nil {
			if ctx.Err() != nil {
				// The op may have taken the lock before it was cut short.
				(&heldLock{n: n, owner: owner}).release()
			}
			return nil, Interrupted(ctx, "during the inspect", err)
		}
		defer lock.release()
		remember(found)
		for _, p := range found.RemovedLeftovers {
			opts.Observer.Step("removed " + p + ", which an earlier run staged and never swapped")
		}
	}
	var repair *Repair
	if u := found.Unfinished; u != nil && !opts.DryRun {
		if repair, err = repairFirst(ctx, n, u, owner.RunID, trustedBinaries(items), opts); err != nil {
			return nil, err
		}
		if found, err = inspect(); err != nil {
			if ctx.Err() != nil {
				return nil, exitcode.WithCode(exitcode.Interrupted, &InterruptedError{During: "during the inspect", Repaired: true, Err: err})
			}
			return nil, err
		}
	}
	if len(found.UnsafeFolders) > 0 {
		return nil, fmt.Errorf("the folders of the binaries are not safe: %s; nothing was changed (docs/security.md)", strings.Join(found.UnsafeFolders, "; "))
	}
	plan, err := MakePlan(items, found)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if !opts.DryRun {
		opts.Knowledge.set(found)
	}
	opts.Observer.Planned(plan)

	r := newSwapRun(n, opts, owner, lock, plan, started)
	report := &Report{Plan: plan, Results: r.results, Repair: repair}
	if opts.DryRun {
		return report, nil
	}
	if report.Services, err = r.run(ctx, found.MissingDirs); err != nil {
		return nil, err
	}
	return report, nil
}

// logPaths says in the node's log (-v) which paths a run can take, by
// what the node can do and what the run was given: patches (compressed
// or patched uploads), attachments (patches that follow the swap
// request), one op (a known node's rebuild swapped in one op; plan is its
// candidate, nil: none) and the ops and uploads started ahead.
func logPaths(n Node, caps node.Capabilities, opts Options, plan *Plan) {
	rtt, measured := n.LinkRTT()
	n.Logger().Info("hot-swap paths",
		"encoded", caps.Encoding && !opts.Transfer.plain(rtt, measured),
		"patches", caps.Encoding && opts.Transfer.Store != nil && !opts.Transfer.plain(rtt, measured),
		"attachments", caps.Attachments,
		"oneOp", plan != nil,
		"opsAhead", caps.OpsAhead,
		"uploadsAhead", caps.UploadsAhead,
		"linkMeasured", caps.LinkRTT)
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
