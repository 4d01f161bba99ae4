package hotswap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
)

// swapRun is a run on one node once it has planned: the plan, each
// item's result (by Item.key in index), how each staged item was sent,
// and the lock and options it runs under. Its methods stage, swap, resend
// and repair, and update the results as they go.
type swapRun struct {
	n       Node
	caps    node.Capabilities
	opts    Options
	owner   ops.LockOwner
	lock    *heldLock
	plan    *Plan
	started time.Time

	results []Result
	index   map[string]int
	// mu guards results and sent while uploads run in parallel.
	mu sync.Mutex
	// sent is, by Item.key, how each staged item went to the node.
	sent map[string]upload
	// fold, when set, is the lock request the first swap op carries (a
	// run in one op, fold.go); refusedFold is set when the node refused
	// it.
	fold        *ops.NodeLockRequest
	refusedFold bool
	// attach is set when the patches made ahead follow the first swap
	// op's request as they are made (a run in one op on a node that
	// takes attachments).
	attach bool
}

// newSwapRun is the run of plan, each item's result set from its step.
func newSwapRun(n Node, opts Options, owner ops.LockOwner, lock *heldLock, plan *Plan, started time.Time) *swapRun {
	r := &swapRun{
		n: n, caps: n.Capabilities(), opts: opts, owner: owner, lock: lock, plan: plan, started: started,
		results: make([]Result, len(plan.Steps)),
		index:   map[string]int{},
		sent:    map[string]upload{},
	}
	for i, s := range plan.Steps {
		r.results[i] = Result{Name: s.Item.Name, Action: s.Action, Detail: s.Reason}
		if s.Action == ActionFailed {
			r.results[i].setErr(errors.New(s.Reason))
			r.results[i].Detail = ""
		}
		r.index[s.Item.key()] = i
	}
	return r
}

// result is the item's result.
func (r *swapRun) result(it Item) *Result { return &r.results[r.index[it.key()]] }

// run stages the plan's updates, swaps them in and runs the items'
// service steps; it returns the downtime of every service the swap
// stopped, and an error only when the plan cannot order the services to
// swap.
func (r *swapRun) run(ctx context.Context, missingDirs []string) ([]ServiceDowntime, error) {
	updates := r.plan.Updates()
	if len(updates) == 0 {
		r.reconfigure(ctx, nil)
		r.serviceSteps(ctx)
		r.finish()
		return nil, nil
	}
	ready := r.stage(ctx, updates, missingDirs)
	if ctx.Err() != nil {
		// Interrupted while staging: nothing was changed yet, and what
		// was staged goes.
		r.interrupted(ctx, cutShort(ctx, r, updates, ready))
		r.finish()
		return nil, nil
	}
	if len(ready) == 0 {
		swapping(r.opts.Observer)
		r.reconfigure(ctx, nil)
		r.serviceSteps(ctx)
		r.finish()
		return nil, nil
	}
	for _, before := range []func(context.Context) error{r.opts.ReadBeforeSwap, r.opts.BeforeSwap} {
		if before == nil {
			continue
		}
		if err := before(ctx); err != nil {
			r.abandon(ready, fmt.Errorf("before the swap: %w", err))
			r.finish()
			return nil, nil
		}
	}
	if err := reorder(r.plan, ready); err != nil {
		return nil, err
	}
	swapping(r.opts.Observer)
	r.reconfigure(ctx, ready)
	files, down := r.swap(ctx, ready)
	if r.refusedFold {
		return nil, errFoldRefused
	}
	for _, st := range r.plan.Steps {
		// The old binary was put back, with the new configuration still.
		if res := r.result(st.Item); res.Failed() {
			r.restoreConfig(ctx, st, res)
		}
	}
	r.serviceSteps(ctx)
	for _, it := range ready {
		// A rename keeps size and time: the destination is now what the
		// swap verified as staged.
		if f, ok := files[it.key()]; ok && r.result(it).Action == ActionUpdated {
			r.opts.Hashes.Remember(it.Destination, f)
		}
	}
	r.finish()
	return down, nil
}

// swap runs the swap op, which decodes and verifies the staged files,
// swaps and releases the node's lock. When a patch did not decode on the
// node (damaged, or the file changed since the inspect), nothing was
// stopped: that file is sent again compressed and the op runs again. It
// keeps going when ctx is cancelled once services may be down (they must
// come back) and stops only when opts.Abort is done. It returns, by item,
// the binaries swapped in as the node verified them, and the downtime of
// every service the op stopped.
func (r *swapRun) swap(ctx context.Context, staged []Item) (map[string]ops.FileInfo, []ServiceDowntime) {
	// The node bounds the op by the request's timings (node.SwapBudget).
	swapCtx, cancel := UntilAbort(ctx, r.opts.Abort)
	defer cancel()
	for {
		req := r.swapRequest(staged)
		r.opts.Observer.Step(fmt.Sprintf("swapping: stop %s; start %s", listOrNone(r.plan.StopOrder), listOrNone(r.plan.StartOrder)))
		// The op renews the lock while it runs, and releases it.
		r.lock.pause()
		resp, err := r.swapOp(swapCtx, req, staged)
		if r.fold != nil && refused(resp, err) {
			if len(resp.Changed) > 0 {
				r.opts.Observer.Step("the node changed since swdt last saw it (" + strings.Join(resp.Changed, "; ") + "): inspecting again")
			}
			r.refusedFold = true
			return nil, nil
		}
		r.fold = nil
		if err != nil && r.opts.Abort.Err() != nil {
			// The second Ctrl-C: no repair is tried (it would be cut
			// short at once); the next run repairs what the swap left.
			r.givenUp(req, staged)
			return nil, nil
		}
		if err != nil {
			r.lock.renew()
			finished := r.repairAfter(ctx, req, staged, err)
			if finished == nil {
				return nil, nil
			}
			// The op ran to its end on the node after all: its own answer
			// is the truth.
			resp = *finished
		}
		r.lock.released = resp.Unlocked
		if len(resp.Undecoded) == 0 {
			return r.swapped(resp, staged), downtimes(resp)
		}
		r.lock.renew()
		if staged = r.resend(ctx, resp, staged); len(staged) == 0 {
			return nil, nil
		}
		if ctx.Err() != nil {
			r.interrupted(ctx, staged)
			return nil, nil
		}
		if err := reorder(r.plan, staged); err != nil {
			r.abandon(staged, err)
			return nil, nil
		}
	}
}

// swapOp runs the swap op of req; the patches of its Attached items
// follow the request as they are made, each ended as failed past
// StreamLimit (the node then reports it undecoded, and resend sends it
// again as an upload). Their bytes count as sent.
func (r *swapRun) swapOp(ctx context.Context, req ops.ServiceSwapRequest, staged []Item) (ops.ServiceSwapResponse, error) {
	var streams []Item
	for _, it := range staged {
		if r.sent[it.key()].attached != nil {
			streams = append(streams, it)
		}
	}
	if len(streams) == 0 || !r.caps.Attachments {
		return r.n.SwapServices(ctx, req)
	}
	pr, pw := io.Pipe()
	written := make([]int64, len(streams))
	tooLarge := make([]bool, len(streams))
	done := make(chan struct{})
	go func() {
		defer close(done)
		var werr error // the op's input: nothing more goes after one
		for i, it := range streams {
			rc := r.sent[it.key()].attached
			if werr == nil {
				cw := &countingWriter{w: pw}
				// A patch that fails, or grows past the limit, fails
				// its item alone: its attachment ends as failed.
				err := ops.WriteAttachment(cw, &limitedStream{r: rc, left: StreamLimit})
				written[i], tooLarge[i], werr = cw.n, errors.Is(err, errStreamLimit), cw.err
			}
			rc.Close()
		}
		pw.CloseWithError(werr)
	}()
	resp, err := r.n.SwapServicesAttached(ctx, req, pr)
	// The op may have stopped reading (a refusal): whatever is left
	// stops with it.
	pr.Close()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, it := range streams {
		r.result(it).BytesSent += written[i]
		r.sent[it.key()] = upload{encoding: ops.EncodingPatch, tooLarge: tooLarge[i]}
	}
	return resp, err
}

// StreamLimit is the most a patch that follows the swap op's request may
// take; a larger one goes again as an upload.
const StreamLimit = 4 * InlineLimit

// errStreamLimit ends a patch past StreamLimit.
var errStreamLimit = errors.New("the patch is larger than a swap request takes")

// limitedStream reads r up to left bytes, then fails with errStreamLimit.
type limitedStream struct {
	r    io.Reader
	left int64
}

func (l *limitedStream) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errStreamLimit
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// countingWriter counts what it writes to w, and keeps w's first error.
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil && c.err == nil {
		c.err = err
	}
	return n, err
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
func (r *swapRun) swapRequest(staged []Item) ops.ServiceSwapRequest {
	opts := r.opts
	req := ops.ServiceSwapRequest{
		Owner:           r.owner,
		StopOrder:       r.plan.StopOrder,
		StartOrder:      r.plan.StartOrder,
		StopTimeoutMs:   int(opts.StopTimeout.Milliseconds()),
		StartTimeoutMs:  int(opts.StartTimeout.Milliseconds()),
		SettleMs:        int(opts.Settle.Milliseconds()),
		HealthTimeoutMs: int(opts.HealthTimeout.Milliseconds()),
		// The lock is kept when a register or restart step follows.
		Unlock: !r.plan.hasServiceSteps(),
		Lock:   r.fold,
	}
	if r.fold != nil {
		req.Expect = r.plan.expect()
		for _, it := range staged {
			// What its patch was made against, as the hash cache knows it.
			cur := r.plan.current(it.Destination)
			req.ExpectFiles = append(req.ExpectFiles, ops.FileInfo{Path: it.Destination, Exists: cur.Exists, Size: cur.Size, ModTicks: cur.ModTicks})
		}
	}
	for _, it := range staged {
		item := ops.SwapItem{
			Service: it.Service, Destination: it.Destination, Staged: it.Staged(), Backup: it.Backup(),
			HealthChecks: it.HealthChecks, SHA256: strings.ToLower(it.Source.SHA256),
			OldSHA256: r.plan.current(it.Destination).SHA256,
		}
		if u := r.sent[it.key()]; u.encoding != "" {
			item.Encoded, item.Encoding, item.Data, item.Size = it.encoded(), u.encoding, u.data, it.Source.Size
			item.Attached = u.attached != nil
			if u.encoding == ops.EncodingPatch {
				// A patch that fails is sent again: compressed, or as an
				// upload when it was too large to follow the request.
				item.Reference, item.Fallback = it.Destination, true
			}
		}
		req.Items = append(req.Items, item)
	}
	return req
}

// swapped reports the swap op's outcome in the results and returns, by
// item, the binaries it swapped in.
func (r *swapRun) swapped(resp ops.ServiceSwapResponse, staged []Item) map[string]ops.FileInfo {
	files := map[string]ops.FileInfo{}
	killed := map[string]bool{}
	for _, k := range resp.Killed {
		killed[strings.ToLower(k)] = true
	}
	for _, it := range resp.Items {
		i, ok := r.index[strings.ToLower(it.Destination)]
		if !ok {
			continue
		}
		res := &r.results[i]
		res.Downtime = time.Duration(it.DowntimeMs) * time.Millisecond
		res.Detail = ""
		switch it.Result {
		case ops.SwapResultSwapped:
			res.Action = ActionUpdated
			if it.File != nil {
				files[strings.ToLower(it.Destination)] = *it.File
			}
		case ops.SwapResultRolledBack:
			res.Action = ActionRolledBack
			res.setErr(&SwapFailure{Service: it.Service, Message: it.Error})
		default:
			res.Action = ActionFailed
			res.setErr(&SwapFailure{Service: it.Service, Message: it.Error})
		}
		var detail []string
		if killed[strings.ToLower(it.Service)] {
			detail = append(detail, fmt.Sprintf("the service did not stop within %s; its process was killed", r.opts.StopTimeout))
		}
		if it.ExitCode != 0 {
			detail = append(detail, fmt.Sprintf("service exit code %d", it.ExitCode))
		}
		detail = append(detail, it.Notes...)
		detail = append(detail, it.Events...)
		res.Detail = strings.Join(detail, "; ")
	}
	for _, p := range resp.NotStarted {
		for _, it := range staged {
			if res := r.result(it); strings.EqualFold(it.Service, p.Service) && res.Error == "" {
				res.Action = ActionFailed
				res.setErr(&SwapFailure{Service: p.Service, Message: p.Error})
			}
		}
	}
	return files
}

// resend handles a swap op that stopped because patches did not decode:
// the items it failed fail, each undecoded one is sent again compressed,
// and the others' staged files are decoded already. It returns the items
// still to swap.
func (r *swapRun) resend(ctx context.Context, resp ops.ServiceSwapResponse, staged []Item) []Item {
	failed := map[string]string{}
	for _, it := range resp.Items {
		failed[strings.ToLower(it.Destination)] = it.Error
	}
	undecoded := map[string]string{}
	for _, u := range resp.Undecoded {
		undecoded[strings.ToLower(u.Destination)] = u.Error
	}
	var (
		next []Item
		g    errgroup.Group
	)
	g.SetLimit(r.opts.Parallel)
	for _, it := range staged {
		res := r.result(it)
		if why, ok := failed[it.key()]; ok {
			r.fail(it, &SwapFailure{Service: it.Service, Message: why})
			continue
		}
		why, ok := undecoded[it.key()]
		if !ok {
			// Decoded into the staged file: it is staged as it is now.
			r.mu.Lock()
			r.sent[it.key()] = upload{}
			next = append(next, it)
			r.mu.Unlock()
			continue
		}
		if !r.caps.Encoding {
			r.fail(it, &SwapFailure{Service: it.Service, Message: why})
			continue
		}
		// A patch too large to follow the request goes as an upload;
		// one that did not work, the whole file compressed. The items
		// sent again meanwhile write sent.
		r.mu.Lock()
		large := r.sent[it.key()].tooLarge
		r.mu.Unlock()
		if large {
			r.opts.Observer.Step(it.Name + ": its patch is larger than a swap request takes; sending it as an upload")
		} else {
			r.opts.Observer.Step(fmt.Sprintf("%s: the patch did not work (%s); sending the whole file", it.Name, why))
		}
		base := r.plan.current(it.Destination).SHA256
		g.Go(func() error {
			var read int64
			update := r.opts.Observer.Upload(it)
			progress := func(s int64) { read = s; update(s) }
			how, transfer := upload{encoding: ops.EncodingZstd}, TransferCompressed
			var wire int64
			var err error
			if large {
				how, transfer = upload{encoding: ops.EncodingPatch}, TransferPatch
				wire, err = sendPatch(ctx, r.n, it, base, r.opts, progress, nil)
			} else {
				wire, err = sendCompressed(ctx, r.n, it, r.opts, progress)
			}
			update(read)
			r.mu.Lock()
			defer r.mu.Unlock()
			res.BytesSent += wire
			res.Transfer = transfer
			if err != nil {
				res.Action, res.Detail = ActionFailed, ""
				res.setErr(err)
				return nil
			}
			r.sent[it.key()] = how
			next = append(next, it)
			return nil
		})
	}
	_ = g.Wait() // per-item errors are in the results
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
func (r *swapRun) serviceSteps(ctx context.Context) {
	for _, s := range r.plan.Steps {
		it := s.Item
		res := r.result(it)
		switch {
		case res.Failed():
		case !s.Service.Exists && it.Register != nil:
			r.opts.Observer.Step("registering service " + it.Service)
			if err := it.Register(ctx); err != nil {
				r.fail(it, fmt.Errorf("register %s: %w", it.Service, err))
				continue
			}
			res.Registered = true
			if err := r.restart(ctx, it, false); err != nil {
				r.fail(it, err)
				continue
			}
			res.Restarted = true
		case res.Action == ActionReconfigure:
			// The new configuration applies from the next start.
			if err := r.restart(ctx, it, isActive(s.Service.Status)); err != nil {
				r.fail(it, err)
				r.restoreConfig(ctx, s, res)
				continue
			}
			res.Action, res.Restarted = ActionReconfigured, true
		case it.Restart && s.Service.Exists && res.Action == ActionUnchanged:
			if err := r.restart(ctx, it, isActive(s.Service.Status)); err != nil {
				r.fail(it, err)
				continue
			}
			res.Restarted = true
		}
	}
}

// restoreConfig puts back the configuration a service had before the run
// changed it, after the service did not come up with the new one (its
// binary, if swapped, was rolled back already), and starts it again. An
// item whose only change was its configuration is then rolled back.
func (r *swapRun) restoreConfig(ctx context.Context, s Step, res *Result) {
	if !res.Reconfigured || s.Previous == nil {
		return
	}
	r.opts.Observer.Step("putting back the configuration of service " + s.Item.Service)
	err := s.Item.Reconfigure(ctx, *s.Previous)
	if err == nil {
		err = r.restart(ctx, s.Item, true)
	}
	if err != nil {
		res.left("putting back its previous configuration failed too: " + err.Error())
		return
	}
	if res.Action == ActionFailed && s.Action == ActionReconfigure {
		res.Action = ActionRolledBack
	}
	res.Reconfigured = false
	res.left("its previous configuration was put back and it runs again")
}

// reconfigure brings the configuration of the services whose step found
// drift in line with their Item.Config: of those whose binary is
// unchanged (restarted by serviceSteps), and of those about to be swapped
// (ready), just before the swap, so that the swap starts them with it.
func (r *swapRun) reconfigure(ctx context.Context, ready []Item) {
	for _, s := range r.plan.Steps {
		res := r.result(s.Item)
		swapped := slices.ContainsFunc(ready, func(it Item) bool { return it.key() == s.Item.key() })
		if len(s.Drift) == 0 || res.Failed() || (s.Action != ActionReconfigure && !swapped) {
			continue
		}
		r.opts.Observer.Step("configuring service " + s.Item.Service + ": " + strings.Join(s.Drift, "; "))
		if err := s.Item.Reconfigure(ctx, *s.Item.Config); err != nil {
			r.fail(s.Item, fmt.Errorf("configure service %s: %w", s.Item.Service, err))
			continue
		}
		res.Reconfigured = true
	}
}

// hasServiceSteps reports whether an item of the plan may register,
// reconfigure or restart its service after the swap.
func (p *Plan) hasServiceSteps() bool {
	for _, s := range p.Steps {
		// A service whose configuration a run changes may need it put
		// back and the service restarted after the swap.
		if s.Item.Restart || (s.Item.Register != nil && !s.Service.Exists) || len(s.Drift) > 0 {
			return true
		}
	}
	return false
}

// restart starts the item's service, stopping it first when it runs, with
// the swap's service op (no binary changes hands), and runs the item's
// StartChecks once it is up.
func (r *swapRun) restart(ctx context.Context, it Item, running bool) error {
	opts := r.opts
	service := it.Service
	req := ops.ServiceSwapRequest{
		Owner:           r.owner,
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
	resp, err := r.n.SwapServices(sctx, req)
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
func (r *swapRun) repairAfter(ctx context.Context, req ops.ServiceSwapRequest, staged []Item, cause error) *ops.ServiceSwapResponse {
	r.opts.Observer.Step("swap failed; repairing the node")
	paths := r.stagedPaths(staged)
	trusted := make([]ops.TrustedBinary, 0, len(req.Items))
	for _, it := range req.Items {
		trusted = append(trusted, ops.TrustedBinary{Service: it.Service, Destination: it.Destination, HealthChecks: it.HealthChecks})
	}
	resp, err := recoverSwap(ctx, r.n, ops.SwapRecoverRequest{RunID: req.Owner.RunID, Staged: paths, Trusted: trusted}, repairBudget(r.opts, len(req.StopOrder)+len(req.StartOrder)), r.opts)
	failed := fmt.Errorf("swap failed: %w", cause)
	switch {
	case err == nil && resp.Finished != nil && resp.Finished.Response != nil:
		r.opts.Observer.Step("the swap ran to its end on the node after the connection dropped; its result follows")
		return resp.Finished.Response
	case err == nil && resp.Finished != nil:
		failed = fmt.Errorf("swap failed: %w", errors.New(resp.Finished.Error))
	}
	for _, it := range staged {
		ie := &ItemError{Err: failed}
		switch {
		case err != nil:
			ie.Left = []string{"repair failed too: " + err.Error()}
			ie.Advice = "run " + r.opts.Command + " again to repair the node, or check the services (Get-Service " + strings.Join(swapServices(req, staged), ",") + ")"
		case !resp.Found:
			ie.Left = []string{"nothing had been changed on the node"}
		default:
			// Each provisioner is told which binary its service runs now.
			repaired := "repaired"
			for _, ri := range resp.Items {
				if strings.EqualFold(ri.Destination, it.Destination) {
					repaired += ": " + recoveredText(ri)
				}
			}
			ie.Left = []string{repaired}
			for _, p := range resp.NotStarted {
				if strings.EqualFold(p.Service, it.Service) {
					ie.Left = append(ie.Left, "the service did not start: "+p.Error)
				}
			}
		}
		r.fail(it, ie)
	}
	return nil
}

// stagedPaths are the files the items left on the node: each staged file
// and, for an encoded upload not yet decoded, the upload.
func (r *swapRun) stagedPaths(staged []Item) []string {
	var paths []string
	for _, it := range staged {
		paths = append(paths, it.Staged())
		if r.sent[it.key()].encoding != "" {
			paths = append(paths, it.encoded())
		}
	}
	return paths
}

// cutShort are the updates that ctx's end cut short while staging: those
// staged (ready) and those whose upload it ended. An update that failed
// for another reason keeps its error.
func cutShort(ctx context.Context, r *swapRun, updates []Step, ready []Item) []Item {
	var cut []Item
	for _, s := range updates {
		if slices.ContainsFunc(ready, func(it Item) bool { return it.key() == s.Item.key() }) || errors.Is(r.result(s.Item).Err, ctx.Err()) {
			cut = append(cut, s.Item)
		}
	}
	return cut
}

// interrupted ends a run that ctx's end cut short before its swap: the
// items cut short, and every service change planned, fail with an
// *InterruptedError, and what they staged is removed.
func (r *swapRun) interrupted(ctx context.Context, cut []Item) {
	err := Interrupted(ctx, "while staging", ctx.Err())
	removeQuietly(r.n, r.stagedPaths(cut)...)
	for _, it := range cut {
		r.fail(it, err)
	}
	for _, s := range r.plan.Steps {
		if s.Action == ActionReconfigure && !r.result(s.Item).Reconfigured {
			r.fail(s.Item, err)
		}
	}
}

// givenUp fails the items of the swap op req that opts.Abort cut short,
// saying what the node may be left with and what to do: the agent was
// ended mid-swap, and its journal makes the next run repair it first.
func (r *swapRun) givenUp(req ops.ServiceSwapRequest, staged []Item) {
	services := swapServices(req, staged)
	for _, it := range staged {
		r.fail(it, &ItemError{Err: errGivenUp,
			Left:   []string{"the swap may be unfinished there (a service stopped, or the new binary not yet verified)"},
			Advice: fmt.Sprintf("run %s again: it repairs an unfinished swap before anything else; or check the services (Get-Service %s)", r.opts.Command, strings.Join(services, ","))})
	}
}

// swapServices are the services the swap op req starts, or the staged
// items' own when it starts none (a service the run registers after).
func swapServices(req ops.ServiceSwapRequest, staged []Item) []string {
	if len(req.StartOrder) > 0 {
		return req.StartOrder
	}
	var services []string
	for _, it := range staged {
		if it.Service != "" && !slices.Contains(services, it.Service) {
			services = append(services, it.Service)
		}
	}
	return services
}

// abandon removes what the items left on the node and fails them with
// err: they will not be swapped, and no service was touched.
func (r *swapRun) abandon(items []Item, err error) {
	removeQuietly(r.n, r.stagedPaths(items)...)
	for _, it := range items {
		r.fail(it, &ItemError{Err: err, Left: []string{untouched}})
	}
}

// fail marks the item failed with err.
func (r *swapRun) fail(it Item, err error) {
	res := r.result(it)
	res.Action, res.Detail = ActionFailed, ""
	res.setErr(err)
}

// removeQuietly deletes leftover staged files. It is best effort: a
// leftover .swdt-new is harmless and is replaced by the next run.
func removeQuietly(n Node, remotePaths ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = n.RemoveFiles(ctx, remotePaths)
}

// finish sets each changed result's duration: the whole run so far, since
// the items were staged in parallel and swapped together.
func (r *swapRun) finish() {
	elapsed := time.Since(r.started)
	for i := range r.results {
		if r.results[i].Action != ActionUnchanged {
			r.results[i].Duration = elapsed
		}
	}
}
