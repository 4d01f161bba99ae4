package hotswap

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
)

// Knowledge is what runs on one node learned of it that the next run may
// act on without asking again: the services and destinations its last
// inspect found, kept by the process (--watch) or recorded in the hash
// cache for the next one. With it, a rebuild whose every change is a
// small patch made ahead against the file swdt itself put there last goes
// in one op: the swap op takes the lock itself, checks that the services
// are as the plan has them, decodes the patches (a destination changed
// since fails its patch's digest, and the file is sent again compressed)
// and swaps. A node that another run holds locked, with an unfinished
// swap or whose services changed makes the run take the usual way: lock
// and inspect, repair, plan. Safe for concurrent use; a nil *Knowledge
// knows nothing.
type Knowledge struct {
	mu    sync.Mutex
	found *ops.ProvisionInspectResponse
}

// NewKnowledge makes a Knowledge that knows last (nil: nothing), as an
// earlier process recorded it (hashcache.File.LastInspect).
func NewKnowledge(last *ops.ProvisionInspectResponse) *Knowledge { return &Knowledge{found: last} }

// set records the inspect a run planned with.
func (k *Knowledge) set(found ops.ProvisionInspectResponse) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.found = &found
}

// Last is the inspect the last run planned with (nil: none), also to
// record for the next process.
func (k *Knowledge) Last() *ops.ProvisionInspectResponse {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.found
}

// errFoldRefused is a swap op that took no lock, found an unfinished swap
// or services other than the plan's: the run takes the usual way.
var errFoldRefused = errors.New("the node asks for the usual way")

// foldCandidate is the plan of items from what opts.Knowledge and the
// hash cache know of the node, when the run may go in one op: on a link
// measured as one patches are sent over, every change a patch being made
// ahead against the digest the hash cache recorded; no service step, no
// registration and no BeforeSwap (a ReadBeforeSwap runs before the op is
// sent). Else nil. It does not wait:
// the patches follow the swap request as they are made on a node that
// takes attachments, else whether they fit in it is inlinePatches.
func foldCandidate(n Node, items []Item, targets []ops.ProvisionTarget, opts Options) *Plan {
	last := opts.Knowledge.Last()
	if last == nil || opts.Ahead == nil || opts.BeforeSwap != nil || len(last.Files) != len(items) {
		return nil
	}
	// Patches only on a link measured as one they are sent over: staging
	// must send nothing before the op takes the lock.
	if !n.Capabilities().Encoding {
		return nil
	}
	rtt, measured := n.LinkRTT()
	if !measured {
		// Just connected, the measure on its way: the last connection's.
		rtt, measured = opts.Transfer.ExpectedRTT, opts.Transfer.ExpectedRTT > 0
	}
	if !measured || opts.Transfer.plain(rtt, true) {
		return nil
	}
	found := *last
	found.Files = make([]ops.FileInfo, len(items))
	found.Unfinished, found.Locked, found.Lock, found.MissingDirs = nil, nil, nil, nil
	for i, t := range targets {
		known := opts.Hashes.Known(t.Destination)
		if known == nil || !known.Exists || !strings.EqualFold(last.Files[i].Path, t.Destination) || items[i].Config != nil || items[i].Restart {
			return nil
		}
		found.Files[i] = *known
	}
	plan, err := MakePlan(items, found)
	if err != nil || plan.hasServiceSteps() {
		return nil
	}
	updates := plan.Updates()
	if len(updates) == 0 {
		return nil
	}
	for _, s := range plan.Steps {
		if s.Action == ActionFailed || s.Action == ActionReconfigure {
			return nil
		}
	}
	for _, s := range updates {
		if !opts.Ahead.made(s.Item, s.Current.SHA256) {
			return nil
		}
	}
	return plan
}

// PrepareSwapOp starts on n, before Run, the swap op of a run of opts
// that may go in one op: a node the run knows (opts.Knowledge) and
// patches being made (opts.Ahead), as under --watch, whose agent is
// checked already. The op's command starts while the patches are made,
// and the next op's channel opens; an op started and not sent does
// nothing.
func PrepareSwapOp(n Node, opts Options) {
	if !n.Capabilities().OpsAhead || opts.Ahead == nil || opts.Knowledge.Last() == nil {
		return
	}
	n.PrepareOp(ops.ServiceSwap.Name)
	n.PrepareSession()
}

// inlinePatches reports whether every update of plan has its patch made
// ahead, complete and small enough to travel in the swap request,
// waiting for them: the run then goes in one op.
func inlinePatches(plan *Plan, opts Options) bool {
	for _, s := range plan.Updates() {
		if !opts.Ahead.inline(s.Item, s.Current.SHA256) {
			return false
		}
	}
	return true
}

// runFolded runs plan as one swap op that takes the node's lock itself;
// with attach the patches follow the op's request as they are made.
// ok is false when the node refused before doing anything (another run's
// lock, an unfinished swap): the run then takes the usual way, as the
// same owner.
func runFolded(ctx context.Context, n Node, plan *Plan, lockReq ops.NodeLockRequest, opts Options, started time.Time, attach bool) (report *Report, ok bool) {
	setLive(lockReq.Owner.RunID, true)
	lock := &heldLock{n: n, owner: lockReq.Owner}
	r := newSwapRun(n, opts, lockReq.Owner, lock, plan, started)
	r.fold, r.attach = &lockReq, attach
	opts.Observer.Planned(plan)
	down, err := r.run(ctx, nil)
	if errors.Is(err, errFoldRefused) {
		return nil, false
	}
	lock.release()
	if err != nil {
		// reorder failed: the plan cannot order its services.
		return nil, false
	}
	return &Report{Plan: plan, Results: r.results, Services: down}, true
}

// refused reports whether the swap op's answer to a folded request says
// that nothing was done and the usual way must be taken.
func refused(resp ops.ServiceSwapResponse, err error) bool {
	if err != nil {
		return opFailed(err, ops.KindUnfinished)
	}
	return resp.Locked != nil && !resp.Locked.Acquired || len(resp.Changed) > 0
}

// expect is the services the plan was made with, by name: what a folded
// swap asks the node to confirm before it does anything.
func (p *Plan) expect() []ops.ServiceInfo {
	out := make([]ops.ServiceInfo, 0, len(p.services))
	for _, s := range p.services {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b ops.ServiceInfo) int {
		return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
	})
	return out
}
