// Package provision is the swdt kubernetes workflow (DESIGN.md §4): it
// selects the provisioners of the loaded nodes, resolves every source
// before any node is touched, hot-swaps them into their services on every
// node in parallel through pkg/hotswap, and with Watch swaps again each
// provisioner whose local build changes. On a node with
// spec.kubernetes.join, a kubelet swap must also be confirmed by the
// cluster, else it is undone (cluster.go).
//
// It owns mapping the node file to hot-swap items (through pkg/target),
// the hash cache and cancellation; it reaches nodes through a
// fleet.Connector and reports through Observer, so it never prints and
// never sees SSH.
package provision

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/source"
	"sigs.k8s.io/swdt/pkg/target"
)

// Observer shows a run. Implementations must be safe for concurrent use:
// nodes run in parallel.
type Observer interface {
	// Step reports what one node is doing.
	Step(node, msg string)
	// Warn reports something the user must see.
	Warn(msg string)
	// Note reports what the run as a whole is doing (--watch).
	Note(msg string)
	// Download reports a download starting; the returned functions take
	// the bytes received so far and end it.
	Download(what string, total int64) (update func(received int64), end func())
	// Node returns the observer of one node's hot-swap; End is called when
	// the node's run is over.
	Node(name string) NodeObserver
}

// NodeObserver is one node's hot-swap observer.
type NodeObserver interface {
	hotswap.Observer
	End()
}

// Options tune a run.
type Options struct {
	// Only selects provisioners by name (case-insensitive; empty: all).
	Only []string
	// Force replaces binaries with the same bytes and hashes every local
	// source again; DryRun only plans.
	Force, DryRun bool
	// Watch swaps a provisioner again whenever its local source changes,
	// after the first run, until ctx ends; Debounce is how long a source
	// must be quiet first.
	Watch    bool
	Debounce time.Duration
	// CacheDir is swdt's cache ("" for the default): downloads and the
	// nodes' hash caches.
	CacheDir string
	// Resolver resolves sources (downloads into CacheDir).
	Resolver *source.Resolver
	// Swap tunes the hot-swap (timings, transfer, parallel uploads, lock
	// wait); its Force, DryRun, Observer, Hashes, BeforeSwap and Command
	// are set here.
	Swap hotswap.Options
	// Snapshot, when set, runs on each node after staging and before the
	// first service stops, and returns the name of the snapshot it took
	// (--snapshot). An error leaves every service running.
	Snapshot func(ctx context.Context, spec *v1alpha1.Node, provisioners []string) (string, error)
	// Observer shows the run.
	Observer Observer
	// Report receives the outcome of every run: the first and, with
	// Watch, each one a change makes. Its error ends the workflow.
	Report func(results []fleet.Result[NodeReport]) error
}

// NodeReport is the outcome on one node.
type NodeReport struct {
	*hotswap.Report
	// Snapshot names the VM snapshot taken before the swap, if any.
	Snapshot string
	// Cluster is what the cluster said of a kubelet swap on a node with
	// spec.kubernetes.join (nil when there was nothing to check).
	Cluster *ClusterCheck
}

// Run hot-swaps the selected provisioners of nodes. Its error is the
// outcome over every node (fleet.Err): a usage error when Only names no
// provisioner, a source that cannot be resolved (nothing is changed on
// any node), or the nodes and provisioners that failed.
func Run(ctx context.Context, nodes []v1alpha1.Node, connect fleet.Connector, opts Options) error {
	selected, err := selectProvisioners(nodes, opts.Only)
	if err != nil {
		return exitcode.WithCode(exitcode.Usage, err)
	}
	ctx, stop := context.WithCancel(ctx)
	r := &run{opts: opts, nodes: selected, stop: stop}
	defer r.close()
	for _, s := range selected {
		s.open(ctx, connect, opts.Observer, opts.Watch)
	}
	// Every source first: a missing build output or a wrong digest must
	// stop the run before any node is changed. Connecting changes
	// nothing: it runs while local sources are hashed.
	r.dialAhead()
	sources, err := r.resolve(ctx, allWork(selected))
	notBuilt := unbuilt(selected, r.notBuilt)
	if err != nil && !(opts.Watch && len(notBuilt) > 0 && len(notBuilt) == unresolved(selected, sources)) {
		return fmt.Errorf("%w; nothing was changed on any node%s", err, onlyHint(selected, sources))
	}
	if !opts.Watch {
		return r.run(ctx, allWork(selected), sources)
	}
	// Watch before the first run, so that a rebuild during it is not missed.
	watcher, err := r.watcher(sources)
	if err != nil {
		return err
	}
	defer watcher.Close()
	// --watch waits for a build that is not made yet: the first run swaps
	// the others. One built since the resolve is swapped at once.
	for _, u := range notBuilt {
		opts.Observer.Note(u.what + " does not exist yet: it is swapped once it is built")
		if _, err := os.Stat(u.path); err == nil {
			watcher.Changed(u.path)
		}
	}
	var runErr error
	if ws := resolvedWork(selected, sources); len(ws) > 0 {
		runErr = r.run(ctx, ws, sources)
	}
	if ctx.Err() != nil {
		return runErr
	}
	return r.watch(ctx, watcher, runErr)
}

// unbuiltSource is a local source whose file did not exist.
type unbuiltSource struct {
	// what names it: "provisioner kubelet's source ./kubelet.exe".
	what string
	path string
}

// unbuilt lists the local sources the resolve found missing (notBuilt,
// by source key), once per source: a file made since is still one, so
// that its first build is swapped as a change.
func unbuilt(nodes []*session, notBuilt map[string]bool) []unbuiltSource {
	var out []unbuiltSource
	seen := map[string]bool{}
	for _, n := range nodes {
		for _, b := range n.provs {
			p, local := b.LocalPath()
			if !local || !notBuilt[b.SourceKey()] || seen[b.SourceKey()] {
				continue
			}
			seen[b.SourceKey()] = true
			out = append(out, unbuiltSource{what: fmt.Sprintf("provisioner %s's source %s", b.Name, b.SourceURL), path: p})
		}
	}
	return out
}

// unresolved counts the sources that could not be resolved.
func unresolved(nodes []*session, sources map[string]*source.File) int {
	seen := map[string]bool{}
	for _, n := range nodes {
		for _, b := range n.provs {
			if sources[b.SourceKey()] == nil {
				seen[b.SourceKey()] = true
			}
		}
	}
	return len(seen)
}

// resolvedWork is the work of the provisioners whose source resolved.
func resolvedWork(nodes []*session, sources map[string]*source.File) []work {
	var ws []work
	for _, n := range nodes {
		w := work{node: n}
		for _, b := range n.provs {
			if sources[b.SourceKey()] != nil {
				w.provs = append(w.provs, b)
			}
		}
		if len(w.provs) > 0 {
			ws = append(ws, w)
		}
	}
	return ws
}

// work is what one run does on one node: some of its provisioners.
type work struct {
	node  *session
	provs []target.Binary
	// ahead are the patches started before its sources were hashed
	// (--watch); nil: runNode starts them.
	ahead *hotswap.Ahead
}

func allWork(nodes []*session) []work {
	out := make([]work, len(nodes))
	for i, n := range nodes {
		out[i] = work{node: n, provs: n.provs}
	}
	return out
}

// selectProvisioners applies Only. Every name in only must be a
// provisioner of some node.
func selectProvisioners(specs []v1alpha1.Node, only []string) ([]*session, error) {
	want := map[string]bool{}
	for _, name := range only {
		if name = strings.TrimSpace(name); name != "" {
			want[strings.ToLower(name)] = true
		}
	}
	seen := map[string]bool{}
	var nodes []*session
	for i := range specs {
		n := &session{spec: &specs[i]}
		for _, b := range target.Provisioners(&specs[i]) {
			if len(want) == 0 || want[strings.ToLower(b.Name)] {
				n.provs = append(n.provs, b)
				seen[strings.ToLower(b.Name)] = true
			}
		}
		if len(n.provs) > 0 {
			nodes = append(nodes, n)
		}
	}
	var unknown []string
	for name := range want {
		if !seen[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		names := Names(specs)
		msg := fmt.Sprintf("--only names no provisioner of the node file: %s", strings.Join(unknown, ", "))
		if s := config.Closest(unknown[0], names); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return nil, fmt.Errorf("%s; its provisioners: %s", msg, strings.Join(names, ", "))
	}
	if len(nodes) == 0 {
		return nil, errors.New("the node file has no kubernetes provisioners (spec.kubernetes.provisioners)")
	}
	return nodes, nil
}

// Names lists the provisioner names of every node, each once, in file
// order.
func Names(specs []v1alpha1.Node) []string {
	var names []string
	for _, n := range specs {
		for _, p := range n.Spec.Kubernetes.Provisioners {
			if !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
		}
	}
	return names
}

// run is one invocation of the workflow.
type run struct {
	opts  Options
	nodes []*session
	// stop ends the run's context, and with it its sessions and hashes.
	stop context.CancelFunc
	// hashing holds, by source key, the hashes --watch started when a
	// change was seen, closed when done (hashEarly); hashes waits for
	// them.
	hashing map[string]chan struct{}
	hashes  sync.WaitGroup
	// notBuilt holds, by source key, the local sources the last resolve
	// found missing.
	notBuilt map[string]bool
}

// dialAhead starts connecting to every node, so that the connections
// are made while the sources are resolved, when every source is a local
// file (a download shows progress, and a passphrase prompt must not run
// into it).
func (r *run) dialAhead() {
	for _, n := range r.nodes {
		for _, b := range n.provs {
			if _, local := b.LocalPath(); !local {
				return
			}
		}
	}
	for _, n := range r.nodes {
		n.dialAhead()
	}
}

// hashEarly starts hashing the local sources of names (node/provisioner)
// as soon as the watcher sees them change, during the debounce: the
// resolver keeps the digest with the file's size, time and identity, so
// the resolve after the debounce finds it when the file has not changed
// since, and hashes again when it has. One hash per source at a time; it
// runs on the watcher's goroutine, as resolve does.
func (r *run) hashEarly(ctx context.Context, names []string) {
	if r.opts.Resolver.Rehash {
		return // every resolve hashes (--force)
	}
	for _, w := range r.workOf(names) {
		for _, b := range w.provs {
			if _, local := b.LocalPath(); !local || b.Source().Archived() {
				continue
			}
			key := b.SourceKey()
			if ch := r.hashing[key]; ch != nil {
				select {
				case <-ch:
				default:
					continue // on its way
				}
			}
			ch := make(chan struct{})
			if r.hashing == nil {
				r.hashing = map[string]chan struct{}{}
			}
			r.hashing[key] = ch
			src := b.Source()
			r.hashes.Go(func() {
				defer close(ch)
				// An error shows in the resolve after the debounce.
				_, _ = r.opts.Resolver.ResolveBinary(ctx, src, nil)
			})
		}
	}
}

// resolve resolves the sources of the work's provisioners, each once;
// with an error, also those it could.
func (r *run) resolve(ctx context.Context, ws []work) (map[string]*source.File, error) {
	out := map[string]*source.File{}
	r.notBuilt = map[string]bool{}
	var errs []error
	for _, w := range ws {
		for _, b := range w.provs {
			if _, done := out[b.SourceKey()]; done {
				continue
			}
			if ch := r.hashing[b.SourceKey()]; ch != nil {
				// Hashed since the change was seen: its digest is kept.
				select {
				case <-ch:
				case <-ctx.Done():
				}
			}
			var update func(int64)
			var end func()
			f, err := r.opts.Resolver.ResolveBinary(ctx, b.Source(), func(received, total int64) {
				if update == nil {
					update, end = r.opts.Observer.Download("download "+b.SourceURL, total)
				}
				update(received)
			})
			if end != nil {
				end()
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("provisioner %s: %w", b.Name, err))
				if _, local := b.LocalPath(); local && errors.Is(err, fs.ErrNotExist) {
					r.notBuilt[b.SourceKey()] = true
				}
				continue
			}
			out[b.SourceKey()] = f
		}
	}
	// On error, out holds the sources that could be resolved.
	return out, errors.Join(errs...)
}

// onlyHint tells how to swap the provisioners whose sources resolved
// without those that did not (a build not made yet): "" when none did.
func onlyHint(nodes []*session, sources map[string]*source.File) string {
	var ok []string
	for _, n := range nodes {
		for _, b := range n.provs {
			if sources[b.SourceKey()] != nil && !slices.Contains(ok, b.Name) {
				ok = append(ok, b.Name)
			}
		}
	}
	if len(ok) == 0 {
		return ""
	}
	return "; to swap the others now, leave it out: --only " + strings.Join(ok, ",")
}

// run swaps the work's provisioners on every node in parallel and reports.
func (r *run) run(ctx context.Context, ws []work, sources map[string]*source.File) error {
	specs := make([]v1alpha1.Node, len(ws))
	byName := map[string]work{}
	for i, w := range ws {
		specs[i] = *w.node.spec
		byName[w.node.spec.Name] = w
	}
	results := fleet.Run(ctx, specs, 0, func(ctx context.Context, spec *v1alpha1.Node) (NodeReport, error) {
		return r.runNode(ctx, byName[spec.Name], sources)
	})
	if r.opts.Report != nil {
		if err := r.opts.Report(results); err != nil {
			return err
		}
	}
	return nothingSucceeded(results, fleet.Err(results, Failures))
}

// nothingSucceeded turns a partial outcome into a failure when no
// provisioner on any node ended as planned: exit 3 says that something
// did.
func nothingSucceeded(results []fleet.Result[NodeReport], err error) error {
	if exitcode.Code(err) != exitcode.Partial {
		return err
	}
	for _, r := range results {
		if r.Err != nil || r.Value.Report == nil {
			continue
		}
		for _, res := range r.Value.Results {
			if !res.Failed() {
				return err
			}
		}
	}
	return exitcode.WithCode(exitcode.Failure, err)
}

// runNode swaps w's provisioners on one node.
func (r *run) runNode(ctx context.Context, w work, sources map[string]*source.File) (NodeReport, error) {
	n := w.node
	out := NodeReport{}
	// Whatever ends the run ends the patches started before it.
	defer w.ahead.Close()
	items := make([]hotswap.Item, 0, len(w.provs))
	for _, b := range w.provs {
		items = append(items, item(n, b, sources[b.SourceKey()], r.opts.Force))
	}
	var check *clusterCheck
	if !r.opts.DryRun {
		var err error
		if check, err = newClusterCheck(n.spec, w.provs, r.opts.Swap.HealthTimeout); err != nil {
			return out, err
		}
	}
	opts := n.swapOptions(r.opts)
	if w.ahead != nil {
		w.ahead.Resolved(items)
		opts.Ahead = w.ahead
	} else {
		// The patches against what the node had last time are made
		// while the node is reached and inspected.
		opts.Ahead = hotswap.Prepare(ctx, items, opts)
		defer opts.Ahead.Close()
	}
	conn, err := n.connection(ctx)
	if err != nil {
		return out, hotswap.Interrupted(ctx, "while connecting", err)
	}
	obs := r.opts.Observer.Node(n.spec.Name)
	defer obs.End()
	opts.Observer = obs
	if opts.Hashes != nil {
		// The agent an earlier run read back is not read back again
		// while the node reports the same size and time for it.
		conn.RememberAgent(n.hashes)
		defer n.saveHashes()
	}
	opts.ReadBeforeSwap = n.readBeforeSwap(check)
	opts.BeforeSwap = n.beforeSwap(r.opts.Snapshot, w.provs, &out)
	out.Report, err = hotswap.Run(ctx, conn, items, opts)
	if err == nil {
		n.keep(opts, items, out.Report)
	}
	if err == nil && check != nil {
		out.Cluster = check.after(ctx, conn, out.Report, opts,
			func(msg string) { obs.Step(msg) }, n.warn)
	}
	return out, err
}

// prepareAhead starts, while w's changed sources are hashed (--watch),
// the patches of those that are local files against what the node had
// last time. They are used only once Resolved has the digests.
func (r *run) prepareAhead(ctx context.Context, w work) *hotswap.Ahead {
	n := w.node
	if n.hashCache(r.opts.CacheDir) == nil {
		return nil
	}
	var items []hotswap.Item
	for _, b := range w.provs {
		p, local := b.LocalPath()
		if !local || b.Source().Archived() {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		st, err := os.Stat(abs)
		if err != nil || !st.Mode().IsRegular() {
			continue // resolve says why
		}
		items = append(items, item(n, b, &source.File{Ref: b.SourceURL, Path: abs, Size: st.Size()}, r.opts.Force))
	}
	if len(items) == 0 {
		return nil
	}
	opts := n.swapOptions(r.opts)
	opts.Ahead = hotswap.Prepare(ctx, items, opts)
	if n.conn != nil {
		hotswap.PrepareSwapOp(n.conn, opts)
	}
	return opts.Ahead
}

// item is the hot-swap item of one provisioner: with a register step when
// the node file says how to register its service (on n's connection,
// made by then).
func item(n *session, b target.Binary, src *source.File, force bool) hotswap.Item {
	it := hotswap.Item{Name: b.Name, Service: b.Service, Helper: b.Helper, Destination: b.Destination,
		Source: src, Force: force || b.Overwrite, HealthChecks: b.HealthChecks, StartChecks: b.HealthChecks}
	if req := b.Register; req != nil {
		it.Register = func(ctx context.Context) error {
			_, err := n.conn.RegisterService(ctx, *req)
			return err
		}
		// An existing service is kept in line with register: changing
		// kubelet's flags is an edit of the node file and a run.
		it.Config = req
		it.ReplaceConfig = b.RegisterReplace || force
		it.Reconfigure = func(ctx context.Context, req ops.ServiceRegisterRequest) error {
			_, err := n.conn.ConfigureService(ctx, req)
			return err
		}
	}
	return it
}

// Failures lists the provisioners of one node's run that failed or were
// rolled back.
func Failures(o NodeReport) []error {
	var errs []error
	for _, res := range o.Results {
		if res.Failed() {
			msg := fmt.Sprintf("provisioner %s %s: %s", res.Name, res.Action, res.Error)
			if res.Detail != "" {
				msg += " (" + res.Detail + ")"
			}
			errs = append(errs, errors.New(msg))
		}
	}
	return errs
}

// close ends the run and waits for everything it started: the hashes
// started early and every session.
func (r *run) close() {
	r.stop()
	r.hashes.Wait()
	for _, n := range r.nodes {
		n.close()
	}
}

// watcher starts watching the local sources of every selected
// provisioner, named node/provisioner.
func (r *run) watcher(sources map[string]*source.File) (*Watcher, error) {
	paths := map[string]string{}
	for _, n := range r.nodes {
		for _, b := range n.provs {
			if p, local := b.LocalPath(); local {
				// A source not built yet is watched at its own path.
				if f := sources[b.SourceKey()]; f != nil && !b.Source().Archived() {
					p = f.Path
				}
				// An archive is watched, not the binary taken out of it.
				paths[n.spec.Name+"/"+b.Name] = p
			}
		}
	}
	if len(paths) == 0 {
		return nil, exitcode.WithCode(exitcode.Usage, errors.New("--watch: no provisioner has a local source to watch; nothing was changed on any node"))
	}
	return NewWatcher(paths, r.opts.Debounce)
}

// workOf is the work of the provisioners named node/provisioner (the
// watcher's names), by node.
func (r *run) workOf(names []string) []work {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var ws []work
	for _, n := range r.nodes {
		w := work{node: n}
		for _, b := range n.provs {
			if want[n.spec.Name+"/"+b.Name] {
				w.provs = append(w.provs, b)
			}
		}
		if len(w.provs) > 0 {
			ws = append(ws, w)
		}
	}
	return ws
}

// holdSwapOps starts on every connected node the swap op of the next
// rebuild (node.PrepareOp): it waits for its request until a change is
// seen, which then sends only the request, one round trip sooner on a
// long link. Its connection's keepalive hears from the node meanwhile, so
// that it is still taken after a long wait (remote.Client.StartAhead).
func (r *run) holdSwapOps() {
	for _, n := range r.nodes {
		if n.conn != nil {
			n.conn.PrepareOp(ops.ServiceSwap.Name)
		}
	}
}

// watch re-runs the provisioners whose source changed until ctx is done,
// and returns the latest run's outcome (last is the first run's).
func (r *run) watch(ctx context.Context, watcher *Watcher, last error) error {
	r.opts.Observer.Note(fmt.Sprintf("watching %d source(s) for changes; Ctrl-C to stop (services keep running)", watcher.Sources()))
	watcher.OnEvent = func(names []string) { r.hashEarly(ctx, names) }
	r.holdSwapOps()
	err := watcher.Run(ctx, func(ctx context.Context, names []string) {
		ws := r.workOf(names)
		r.opts.Observer.Note("changed: " + strings.Join(names, ", "))
		// The nodes are connected: the patches are made while the
		// sources are hashed.
		for i := range ws {
			ws[i].ahead = r.prepareAhead(ctx, ws[i])
		}
		changed, err := r.resolve(ctx, ws)
		if err != nil {
			for _, w := range ws {
				w.ahead.Close()
			}
			last = err
			r.opts.Observer.Warn(fmt.Sprintf("%v; waiting for the next change", err))
			return
		}
		last = r.run(ctx, ws, changed)
		if last != nil {
			r.opts.Observer.Warn(last.Error())
		}
		r.holdSwapOps()
	})
	if err != nil {
		return err
	}
	return last
}
