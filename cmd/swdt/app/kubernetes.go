package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/provision"
	"sigs.k8s.io/swdt/pkg/source"
	"sigs.k8s.io/swdt/pkg/ui"
)

// kubernetesFlags are the flags of swdt kubernetes.
type kubernetesFlags struct {
	only     []string
	force    bool
	dryRun   bool
	watch    bool
	debounce time.Duration
	swap     swapFlags
	transfer transferFlags
	download downloadFlags
	parallel int
	cacheDir string
	snapshot bool
}

func newKubernetesCommand(e *env) *cobra.Command {
	f := &kubernetesFlags{}
	cmd := &cobra.Command{
		Use:     "kubernetes",
		Aliases: []string{"k8s"},
		Short:   "Hot-swap custom binaries into running Windows services",
		Long: `Put each provisioner's binary into its Windows service on every node of the
node file, with as little downtime as possible:

  1. resolve every source (local path, file:// or http(s):// into a verified
     cache) before any node is contacted;
  2. inspect all destinations and services in one round trip and plan:
     binaries with the same SHA-256 are skipped unless --force or overwrite;
  3. stage changed binaries next to their destinations while the services
     keep running, and verify them on the node;
  4. swap in the node's own dependency order: stop (dependents first, a
     hung stop is killed), keep the old binary as .swdt-bak, rename the new
     one into place, start, settle, run health checks;
  5. roll back a binary whose service fails, and report why.

A run holds the node's swap lock from inspection to the end of the swap (a
second run waits up to --lock-wait), and first repairs a swap on the node
that an earlier run left unfinished (killed, node lost), saying which binary
each service was left with.

Exit codes: 0 success, 1 failure (no node could be reached), 2 usage or
config error, 3 partial (some provisioners or nodes failed).

With --snapshot, each node's VM (spec.vm) gets a snapshot after staging
and before the first service stops, named swdt-<time>-<provisioners>, so
that 'swdt vm revert NAME' undoes a bad build in one step; a snapshot that
fails leaves every service running.

The first Ctrl-C stops staging but lets a running swap finish, so services
are running again when swdt exits; a second Ctrl-C gives up at once.`,
		Example: `  swdt kubernetes -c node.yaml
  swdt kubernetes -c node.yaml --only kubelet,kube-proxy --dry-run
  swdt kubernetes -c node.yaml --watch          # re-swap on every rebuild
  swdt kubernetes -c node.yaml --snapshot       # snapshot each VM before the swap
  swdt kubernetes -c node.yaml -o json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.parallel < 1 {
				return exitcode.WithCode(exitcode.Usage, errors.New("--parallel must be at least 1"))
			}
			if f.dryRun && f.watch {
				return exitcode.WithCode(exitcode.Usage, errors.New("--dry-run and --watch cannot be combined"))
			}
			return runKubernetes(cmd.Context(), e, f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.only, "only", nil, "provisioners to run, by name (comma-separated; default all)")
	_ = cmd.RegisterFlagCompletionFunc("only", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		path, _ := cmd.Flags().GetString("config")
		res, err := config.Load(path)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return provisionerNames(res.Nodes), cobra.ShellCompDirectiveNoFileComp
	})
	fl.BoolVar(&f.force, "force", false, "replace binaries even when the node has the same bytes, and hash every local source again")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan and change nothing")
	fl.BoolVar(&f.watch, "watch", false, "after the run, re-swap a provisioner whenever its local source changes")
	fl.DurationVar(&f.debounce, "debounce", 500*time.Millisecond, "with --watch: how long a source must be quiet before it is swapped")
	f.swap.add(fl)
	f.transfer.add(fl)
	f.download.add(fl)
	fl.IntVar(&f.parallel, "parallel", 4, "uploads at a time per node")
	fl.BoolVar(&f.snapshot, "snapshot", false, "snapshot each node's VM (spec.vm) before the swap; with --watch, before every swap")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "where downloaded sources are cached (default: <user cache dir>/swdt)")
	_ = cmd.MarkFlagDirname("cache-dir")
	return cmd
}

// kubeNode is one node of a run: its config, the provisioners selected
// for it and, once connected, its connection (kept for --watch).
type kubeNode struct {
	spec  *v1alpha1.Node
	provs []v1alpha1.ProvisionerSpec
	conn  *node.Node
}

// nodeWork is what one run does on one node: some of its provisioners.
type nodeWork struct {
	node  *kubeNode
	provs []v1alpha1.ProvisionerSpec
}

func allWork(nodes []*kubeNode) []nodeWork {
	out := make([]nodeWork, len(nodes))
	for i, kn := range nodes {
		out[i] = nodeWork{node: kn, provs: kn.provs}
	}
	return out
}

// kubeRun is one invocation of swdt kubernetes.
type kubeRun struct {
	e        *env
	f        *kubernetesFlags
	progress *ui.Progress
	resolver *source.Resolver
	nodes    []*kubeNode
	abort    context.Context
}

func runKubernetes(ctx context.Context, e *env, f *kubernetesFlags) error {
	res, err := e.loadConfig(config.PrivateKeyFile | config.ProvisionerSources)
	if err != nil {
		return err
	}
	nodes, err := selectProvisioners(res.Nodes, f.only)
	if err != nil {
		return exitcode.WithCode(exitcode.Usage, err)
	}
	if f.snapshot {
		if err := checkSnapshotNodes(res.Path, res.Nodes); err != nil {
			return err
		}
	}
	k := &kubeRun{e: e, f: f, progress: e.ui.NewProgress(), resolver: f.download.resolver(f.cacheDir, f.force), nodes: nodes}
	abort, stop := e.interrupts(k.progress.Warn)
	defer stop()
	k.abort = abort
	defer k.close()

	// Every source first: a missing build output or a wrong digest must
	// stop the run before any node is touched.
	sources, err := k.resolve(ctx, allWork(nodes))
	if err != nil {
		return fmt.Errorf("%w; nothing was changed on any node", err)
	}
	if !f.watch {
		return k.run(ctx, allWork(nodes), sources)
	}
	// Watch before the first run, so that a rebuild during it is not missed.
	watcher, err := k.watcher(sources)
	if err != nil {
		return err
	}
	defer watcher.Close()
	runErr := k.run(ctx, allWork(nodes), sources)
	if ctx.Err() != nil {
		return runErr
	}
	return k.watch(ctx, watcher, runErr)
}

// selectProvisioners applies --only. Every name in only must be a
// provisioner of some node.
func selectProvisioners(specs []v1alpha1.Node, only []string) ([]*kubeNode, error) {
	want := map[string]bool{}
	for _, name := range only {
		if name = strings.TrimSpace(name); name != "" {
			want[strings.ToLower(name)] = true
		}
	}
	seen := map[string]bool{}
	var nodes []*kubeNode
	for i := range specs {
		kn := &kubeNode{spec: &specs[i]}
		for _, p := range specs[i].Spec.Kubernetes.Provisioners {
			if len(want) == 0 || want[strings.ToLower(p.Name)] {
				kn.provs = append(kn.provs, p)
				seen[strings.ToLower(p.Name)] = true
			}
		}
		if len(kn.provs) > 0 {
			nodes = append(nodes, kn)
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
		names := provisionerNames(specs)
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

// sourceKey identifies a resolved source; nodes that name the same source
// share one download.
type sourceKey struct{ ref, sha string }

func keyOf(p v1alpha1.ProvisionerSpec) sourceKey {
	return sourceKey{ref: p.SourceURL, sha: strings.ToLower(p.SHA256)}
}

// resolve resolves the sources of the work's provisioners, downloading
// with a progress bar.
func (k *kubeRun) resolve(ctx context.Context, work []nodeWork) (map[sourceKey]*source.File, error) {
	out := map[sourceKey]*source.File{}
	var errs []error
	for _, w := range work {
		for _, p := range w.provs {
			key := keyOf(p)
			if _, done := out[key]; done {
				continue
			}
			var t *ui.Transfer
			f, err := k.resolver.Resolve(ctx, p.SourceURL, p.SHA256, func(received, total int64) {
				if t == nil {
					t = k.progress.Transfer("download "+p.SourceURL, total)
				}
				t.Update(received)
			})
			if t != nil {
				t.End()
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("provisioner %s: %w", p.Name, err))
				continue
			}
			out[key] = f
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// nodeOutcome is what one node's run produced.
type nodeOutcome struct {
	report *provision.Report
	// snapshot names the VM snapshot --snapshot took, if any.
	snapshot string
}

// run swaps the work's provisioners on every node in parallel and prints
// the summary.
func (k *kubeRun) run(ctx context.Context, work []nodeWork, sources map[sourceKey]*source.File) error {
	specs := make([]v1alpha1.Node, len(work))
	byName := map[string]nodeWork{}
	for i, w := range work {
		specs[i] = *w.node.spec
		byName[w.node.spec.Name] = w
	}
	results := fleet.Run(ctx, specs, 0, func(ctx context.Context, spec *v1alpha1.Node) (_ nodeOutcome, err error) {
		out := nodeOutcome{}
		out.report, err = k.runNode(ctx, byName[spec.Name], sources, &out.snapshot)
		return out, err
	})
	if err := k.print(results); err != nil {
		return err
	}
	return fleet.Err(results, failedProvisioners)
}

// runNode swaps w's provisioners on one node; with --snapshot, the name of
// the snapshot taken before the swap goes to *snapshot.
func (k *kubeRun) runNode(ctx context.Context, w nodeWork, sources map[sourceKey]*source.File, snapshot *string) (*provision.Report, error) {
	kn := w.node
	name := kn.spec.Name
	if kn.conn == nil {
		if h := kn.spec.Spec.Credentials.Hostname; h != "" {
			k.progress.Step(name, "connecting to %s", h)
		} else {
			k.progress.Step(name, "connecting to VM %s at the address its hypervisor reports", kn.spec.Spec.VM.Name)
		}
		conn, err := k.e.connect(ctx, kn.spec, func(msg string) { k.progress.Warn("node %s: %s", name, msg) })
		if err != nil {
			return nil, err
		}
		kn.conn = conn
	}
	items := make([]provision.Item, 0, len(w.provs))
	for _, p := range w.provs {
		items = append(items, provision.Item{
			Name:         p.Name,
			Service:      p.ServiceName(),
			Helper:       p.Helper(),
			Destination:  p.Destination,
			Source:       sources[keyOf(p)],
			Force:        k.f.force || p.Overwrite,
			HealthChecks: healthChecks(p.HealthChecks),
		})
	}
	obs := &kubeObserver{node: name, progress: k.progress, transfers: map[string]*ui.Transfer{}}
	defer obs.end()
	opts := k.f.swap.options()
	opts.Force, opts.DryRun, opts.Parallel = k.f.force, k.f.dryRun, k.f.parallel
	opts.Abort, opts.Observer, opts.Command = k.abort, obs, "swdt kubernetes"
	opts.Transfer = k.f.transfer.transfer(k.f.cacheDir)
	if k.f.snapshot {
		opts.BeforeSwap = func(ctx context.Context) error { return k.snapshotVM(ctx, w, snapshot) }
	}
	if hashes := openHashes(k.f.cacheDir, kn.spec); hashes != nil {
		opts.Hashes = hashes
		defer func() {
			if err := hashes.Save(); err != nil {
				k.progress.Warn("node %s: %v (the next run hashes every binary on the node again)", name, err)
			}
		}()
	}
	return provision.Run(ctx, kn.conn, items, opts)
}

func healthChecks(in []v1alpha1.HealthCheck) []ops.HealthCheckSpec {
	out := make([]ops.HealthCheckSpec, len(in))
	for i, c := range in {
		out[i] = ops.HealthCheckSpec{NamedPipe: c.NamedPipe, TCPPort: c.TCPPort, Command: c.Command}
	}
	return out
}

// failedProvisioners lists the provisioners of one node's run that
// failed or were rolled back.
func failedProvisioners(o nodeOutcome) []error {
	var errs []error
	for _, res := range o.report.Results {
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
	Repair       *provision.Repair `json:"repair,omitempty"`
	Provisioners []kubeProvJSON    `json:"provisioners"`
	// Services are the services the swap stopped (the provisioners' own
	// and their dependents), in stop order, with their downtime.
	Services []kubeServiceJSON `json:"services"`
	// Snapshot names the VM snapshot taken before the swap (--snapshot).
	Snapshot string `json:"snapshot,omitempty"`
}

type kubeProvJSON struct {
	Name string `json:"name"`
	// Result is Action in the vocabulary every command shares.
	Result     string `json:"result"`
	Action     string `json:"action"`
	BytesSent  int64  `json:"bytesSent"`
	FileSize   int64  `json:"fileSize"`
	Transfer   string `json:"transfer,omitempty"`
	DurationMs int64  `json:"durationMs"`
	DowntimeMs int64  `json:"downtimeMs"`
	Error      string `json:"error"`
	Detail     string `json:"detail,omitempty"`
}

type kubeServiceJSON struct {
	Name       string `json:"name"`
	DowntimeMs int64  `json:"downtimeMs"`
	// Running is false when the service is not Running after the swap.
	Running bool `json:"running"`
}

func (k *kubeRun) print(results []fleet.Result[nodeOutcome]) error {
	if k.e.ui.Format() == ui.FormatJSON {
		doc := kubeJSON{docMeta: meta("KubernetesReport"), Nodes: []kubeNodeJSON{}}
		for _, r := range results {
			n := kubeNodeJSON{Name: r.Node, Provisioners: []kubeProvJSON{}, Services: []kubeServiceJSON{}, Snapshot: r.Value.snapshot}
			if r.Err != nil {
				n.Error = r.Err.Error()
			} else {
				n.Repair = r.Value.report.Repair
				for _, res := range r.Value.report.Results {
					n.Provisioners = append(n.Provisioners, kubeProvJSON{
						Name: res.Name, Result: provisionResult(res.Action), Action: string(res.Action), BytesSent: res.BytesSent, FileSize: res.FileSize, Transfer: res.Transfer,
						DurationMs: res.Duration.Milliseconds(), DowntimeMs: res.Downtime.Milliseconds(),
						Error: res.Error, Detail: res.Detail,
					})
				}
				for _, d := range r.Value.report.Services {
					n.Services = append(n.Services, kubeServiceJSON{Name: d.Service, DowntimeMs: d.Downtime.Milliseconds(), Running: d.Running})
				}
			}
			doc.Nodes = append(doc.Nodes, n)
		}
		return k.e.ui.JSON(doc)
	}
	many := len(results) > 1
	var headers []string
	if many {
		headers = append(headers, "NODE")
	}
	if k.f.dryRun {
		headers = append(headers, "PROVISIONER", "ACTION", "REASON", "DESTINATION")
	} else {
		headers = append(headers, "PROVISIONER", "ACTION", "SENT", "SAVED", "TIME", "DOWNTIME")
	}
	var rows [][]string
	for _, r := range results {
		if r.Err != nil {
			row := []string{"-", "failed", "-", "-", "-", "-"}
			if k.f.dryRun {
				row = row[:4]
			}
			if many {
				row = append([]string{r.Node}, row...)
			}
			rows = append(rows, row)
			continue
		}
		for i, res := range r.Value.report.Results {
			var row []string
			if k.f.dryRun {
				step := r.Value.report.Plan.Steps[i]
				row = []string{res.Name, string(res.Action), step.Reason, step.Item.Destination}
			} else {
				row = []string{res.Name, string(res.Action), ui.Bytes(res.BytesSent), saved(res), duration(res.Duration), duration(res.Downtime)}
			}
			if many {
				row = append([]string{r.Node}, row...)
			}
			rows = append(rows, row)
		}
	}
	return k.e.ui.Table(headers, rows)
}

// saved is how much less than the file went over the wire, and how:
// "99% patch", "46% compressed"; "-" when nothing was saved.
func saved(res provision.Result) string {
	if res.FileSize <= 0 || res.BytesSent >= res.FileSize || res.Transfer == "" || res.Transfer == provision.TransferPlain {
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

// watch re-swaps provisioners whose local source changes until ctx ends,
// and returns the latest run's outcome (last is the first run's).
// watcher starts watching the local sources of every selected provisioner,
// named node/provisioner.
func (k *kubeRun) watcher(sources map[sourceKey]*source.File) (*provision.Watcher, error) {
	paths := map[string]string{}
	for _, kn := range k.nodes {
		for _, p := range kn.provs {
			if f := sources[keyOf(p)]; f != nil && isLocal(p.SourceURL) {
				paths[kn.spec.Name+"/"+p.Name] = f.Path
			}
		}
	}
	if len(paths) == 0 {
		return nil, exitcode.WithCode(exitcode.Usage, errors.New("--watch: no provisioner has a local source to watch; nothing was changed on any node"))
	}
	return provision.NewWatcher(paths, k.f.debounce)
}

// watch re-runs the provisioners whose source changed until ctx is done.
func (k *kubeRun) watch(ctx context.Context, watcher *provision.Watcher, last error) error {
	k.progress.Note("watching %d source(s) for changes; Ctrl-C to stop (services keep running)", watcher.Sources())
	err := watcher.Run(ctx, func(ctx context.Context, names []string) {
		want := map[string]bool{}
		for _, n := range names {
			want[n] = true
		}
		var work []nodeWork
		for _, kn := range k.nodes {
			w := nodeWork{node: kn}
			for _, p := range kn.provs {
				if want[kn.spec.Name+"/"+p.Name] {
					w.provs = append(w.provs, p)
				}
			}
			if len(w.provs) > 0 {
				work = append(work, w)
			}
		}
		k.progress.Note("changed: %s", strings.Join(names, ", "))
		changed, err := k.resolve(ctx, work)
		if err != nil {
			last = err
			k.progress.Warn("%v; waiting for the next change", err)
			return
		}
		last = k.run(ctx, work, changed)
		if last != nil {
			k.progress.Warn("%v", last)
		}
	})
	if err != nil {
		return err
	}
	return last
}

// isLocal reports whether a source is a local file that can be watched.
func isLocal(ref string) bool {
	u, err := url.Parse(ref)
	return err != nil || len(u.Scheme) <= 1 || u.Scheme == "file"
}

func (k *kubeRun) close() {
	for _, kn := range k.nodes {
		if kn.conn != nil {
			_ = kn.conn.Close()
		}
	}
}

// kubeObserver shows one node's run: the plan, its steps and a transfer
// per staged file.
type kubeObserver struct {
	node     string
	progress *ui.Progress

	mu        sync.Mutex
	transfers map[string]*ui.Transfer
}

func (o *kubeObserver) Planned(plan *provision.Plan) {
	var b strings.Builder
	b.WriteString("plan:")
	for _, s := range plan.Steps {
		line := fmt.Sprintf("\n%-12s %-10s %s", s.Item.Name, s.Action, s.Reason)
		if s.Action == provision.ActionUpdate && s.Item.Source != nil {
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

func (o *kubeObserver) Step(msg string) { o.progress.Step(o.node, "%s", msg) }

func (o *kubeObserver) Upload(item provision.Item) func(sent int64) {
	t := o.progress.Transfer(fmt.Sprintf("node %s: stage %s", o.node, item.Name), item.Source.Size)
	o.mu.Lock()
	o.transfers[item.Name] = t
	o.mu.Unlock()
	return t.Update
}

// end finishes transfers that did not complete (a failed upload).
func (o *kubeObserver) end() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range o.transfers {
		t.End()
	}
}

// provisionerNames lists the provisioner names of every node, each once,
// in file order.
func provisionerNames(specs []v1alpha1.Node) []string {
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
