package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hashcache"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/wins"
)

// winsFlags are the flags of `swdt wins` and its subcommands.
type winsFlags struct {
	deep     bool
	dryRun   bool
	swap     swapFlags
	download downloadFlags
}

// winsNodeJSON is one node in `swdt wins -o json` output.
type winsNodeJSON struct {
	Name      string           `json:"name"`
	Deploy    *wins.Deployment `json:"deploy,omitempty"`
	Uninstall *wins.Removal    `json:"uninstall,omitempty"`
	Checks    []checkJSON      `json:"checks"`
	// Error says why nothing was done on the node.
	Error string `json:"error,omitempty"`
}

// checkJSON is a wins check with its result in the shared vocabulary.
type checkJSON struct {
	wins.Check
	Result string `json:"result"`
}

// winsJSON is `swdt wins -o json` output.
type winsJSON struct {
	docMeta
	Nodes []winsNodeJSON `json:"nodes"`
}

const winsExitCodes = `Exit codes: 0 success, 3 a check, the deploy or some node failed, 1 nothing
could be done (e.g. the node is unreachable), 2 the file is invalid.`

func newWinsCommand(e *env) *cobra.Command {
	var f winsFlags
	cmd := &cobra.Command{
		Use:   "wins",
		Short: "Deploy rancher/wins and verify its named-pipe bridge",
		Long: `Deploy rancher/wins from spec.wins on every node of the -c file, in parallel:

  - write wins' config (beside wins.exe, as "config") when it changed; the
    smoke path <wins dir>\` + wins.SmokeName + ` is always whitelisted for --deep;
  - hot-swap wins.exe like swdt kubernetes does: staged while wins runs,
    orphaned rancher-wins-* host processes stopped, health checks (both
    pipes and a get-version round trip), rolled back when they fail;
  - register the rancher-wins service when it is missing, and start it;
    restart it when only the config changed;
  - verify: the service is Running and Automatic, \\.\pipe\rancher_wins and
    \\.\pipe\rancher_wins_proxy exist, wins.exe cli hst get-version answers
    through the pipe with the host registry's build values, and with --deep a
    copy of hostname.exe runs through wins cli prc run (then is cleaned up).

wins v0.16 and later removed the named-pipe bridge: use v0.15.x or earlier.

The first Ctrl-C lets a swap or restart in progress finish, so rancher-wins
is running again when swdt exits; a second Ctrl-C gives up at once.

` + winsExitCodes,
		Example: "  swdt wins -c node.yaml\n  swdt wins -c node.yaml --deep -o json\n  swdt wins verify -c node.yaml\n  swdt wins uninstall -c node.yaml",
		Args:    groupArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWins(cmd.Context(), e, f)
		},
	}
	cmd.Flags().BoolVar(&f.deep, "deep", false, "also run a whitelisted process through the pipe")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "show the plan and change nothing")
	f.swap.add(cmd.Flags())
	f.download.add(cmd.Flags())
	cmd.AddCommand(newWinsVerifyCommand(e), newWinsUninstallCommand(e))
	return cmd
}

func newWinsVerifyCommand(e *env) *cobra.Command {
	var f winsFlags
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the wins bridge without changing anything",
		Long: `Run the verification report of swdt wins alone: service, pipes, get-version
and, with --deep, a whitelisted process run through the pipe (its copy and
process are removed afterwards). A node without spec.wins is checked at
the default C:\etc\rancher\wins\wins.exe.

` + winsExitCodes,
		Example: "  swdt wins verify -c node.yaml --deep",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWinsOn(cmd.Context(), e, true, config.PrivateKeyFile, func(ctx context.Context, n *node.Node, spec *v1alpha1.Node, _ *winsObserver) (*wins.Report, error) {
				return wins.Verify(ctx, n, spec.Spec.Wins, f.deep)
			}, "verified")
		},
	}
	cmd.Flags().BoolVar(&f.deep, "deep", false, "also run a whitelisted process through the pipe")
	return cmd
}

func newWinsUninstallCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "uninstall",
		Short: "Stop and unregister wins, remove its binary and config",
		Long: `Stop the rancher-wins service and any rancher-wins-* host processes,
unregister the service, and remove wins.exe (with swdt's .swdt-* files
beside it) and its config, which is kept as config.swdt-bak. A node without
spec.wins is cleaned at the default C:\etc\rancher\wins.

` + winsExitCodes,
		Example: "  swdt wins uninstall -c node.yaml",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWinsOn(cmd.Context(), e, true, config.PrivateKeyFile, func(ctx context.Context, n *node.Node, spec *v1alpha1.Node, _ *winsObserver) (*wins.Report, error) {
				return wins.Uninstall(ctx, n, spec.Spec.Wins)
			}, "uninstalled")
		},
	}
}

func runWins(ctx context.Context, e *env, f winsFlags) error {
	done := "deployed"
	if f.dryRun {
		done = "planned"
	}
	abort, stop := e.interrupts(e.ui.Warn)
	defer stop()
	return runWinsOn(ctx, e, false, config.PrivateKeyFile|config.WinsSource, func(ctx context.Context, n *node.Node, spec *v1alpha1.Node, obs *winsObserver) (*wins.Report, error) {
		swap := f.swap.options()
		swap.Observer, swap.Abort, swap.Command = obs.forNode(spec.Name), abort, "swdt wins"
		if hashes := hashcache.ForNode("", spec); hashes != nil {
			swap.Hashes = hashes
			defer func() { _ = hashes.Save() }() // without it the next run re-hashes wins.exe
		}
		return wins.Deploy(ctx, n, spec.Spec.Wins, wins.Options{Deep: f.deep, DryRun: f.dryRun, Swap: swap, Resolver: f.download.resolver("", false)})
	}, done)
}

// runWinsOn runs fn on every node in parallel (only nodes with spec.wins
// unless anyNode), prints the reports and turns them into an exit code.
func runWinsOn(ctx context.Context, e *env, anyNode bool, files config.FileKind,
	fn func(ctx context.Context, n *node.Node, spec *v1alpha1.Node, obs *winsObserver) (*wins.Report, error), done string) error {
	res, err := e.loadConfig(files)
	if err != nil {
		return err
	}
	nodes := res.Nodes
	if !anyNode {
		nodes = nil
		for _, n := range res.Nodes {
			if n.Spec.Wins == nil {
				e.ui.Warn("node %s has no spec.wins: skipped", n.Name)
				continue
			}
			nodes = append(nodes, n)
		}
		if len(nodes) == 0 {
			return exitcode.WithCode(exitcode.Usage,
				fmt.Errorf("no node in %s has spec.wins: add a wins section (see samples/wins.yaml)", res.Path))
		}
	}
	obs := &winsObserver{ui: e.ui}
	results := fleet.Run(ctx, nodes, 0, func(ctx context.Context, spec *v1alpha1.Node) (*wins.Report, error) {
		n, err := e.connect(ctx, spec, func(msg string) { obs.warn(spec.Name, msg) })
		if err != nil {
			return nil, err
		}
		defer n.Close()
		return fn(ctx, n, spec, obs)
	})
	if err := printWins(e.ui, results); err != nil {
		return err
	}
	if err := fleet.Err(results, failedWins); err != nil {
		return err
	}
	e.ui.Success("wins %s on %d node(s)", done, len(results))
	return nil
}

// failedWins lists a failed deploy and the failed checks of one node.
func failedWins(r *wins.Report) []error {
	var errs []error
	if r.Deploy != nil && r.Deploy.Error != "" {
		errs = append(errs, fmt.Errorf("deploy %s: %s", r.Deploy.Action, r.Deploy.Error))
	}
	for _, c := range r.Checks {
		if !c.OK {
			errs = append(errs, fmt.Errorf("check %s: %s", c.Name, c.Detail))
		}
	}
	return errs
}

// printWins shows every node's deploy and checks as a table or as JSON. A
// node that could not be reached gets one row; its error is reported by
// Run.
func printWins(u *ui.UI, results []fleet.Result[*wins.Report]) error {
	out := winsJSON{docMeta: meta("WinsReport"), Nodes: []winsNodeJSON{}}
	var rows [][]string
	for _, r := range results {
		nj := winsNodeJSON{Name: r.Node, Checks: []checkJSON{}}
		if r.Err != nil {
			nj.Error = r.Err.Error()
			rows = append(rows, []string{r.Node, "-", "failed", "nothing done: see the error below"})
			out.Nodes = append(out.Nodes, nj)
			continue
		}
		rep := r.Value
		nj.Deploy, nj.Uninstall = rep.Deploy, rep.Uninstall
		for _, c := range rep.Checks {
			nj.Checks = append(nj.Checks, checkJSON{Check: c, Result: checkResult(c.OK)})
		}
		if d := rep.Deploy; d != nil {
			rows = append(rows, []string{r.Node, "deploy", string(d.Action), deployDetail(d)})
		}
		if rm := rep.Uninstall; rm != nil {
			rows = append(rows, []string{r.Node, "uninstall", "done", uninstallDetail(rm)})
		}
		for _, c := range rep.Checks {
			result := "ok"
			if !c.OK {
				result = "FAILED"
			}
			rows = append(rows, []string{r.Node, c.Name, result, c.Detail})
		}
		out.Nodes = append(out.Nodes, nj)
	}
	if u.Format() == ui.FormatJSON {
		return u.JSON(out)
	}
	return u.Table([]string{"NODE", "STEP", "RESULT", "DETAIL"}, rows)
}

func deployDetail(d *wins.Deployment) string {
	var parts []string
	parts = append(parts, "wins.exe "+string(d.Binary))
	if d.BytesSent > 0 {
		parts = append(parts, fmt.Sprintf("%d bytes sent", d.BytesSent))
	}
	if d.ConfigChanged {
		parts = append(parts, "config written")
	}
	if d.Registered {
		parts = append(parts, "service registered")
	}
	if d.Restarted {
		parts = append(parts, "service (re)started")
	}
	if d.StoppedOrphans > 0 {
		parts = append(parts, fmt.Sprintf("%d orphaned process(es) stopped", d.StoppedOrphans))
	}
	if d.Error != "" {
		parts = append(parts, d.Error)
	}
	return strings.Join(parts, "; ")
}

func uninstallDetail(r *wins.Removal) string {
	parts := []string{fmt.Sprintf("service removed: %t", r.ServiceRemoved), fmt.Sprintf("%d file(s) removed", len(r.Removed))}
	if r.StoppedProcesses > 0 {
		parts = append(parts, fmt.Sprintf("%d process(es) stopped", r.StoppedProcesses))
	}
	if r.ConfigBackup != "" {
		parts = append(parts, "config kept as "+r.ConfigBackup)
	}
	return strings.Join(parts, "; ")
}

// winsObserver shows progress on stderr (ui.UI is safe for the nodes'
// concurrent use).
type winsObserver struct {
	ui *ui.UI
}

func (o *winsObserver) forNode(name string) hotswap.Observer {
	return &winsNodeObserver{o: o, node: name}
}

func (o *winsObserver) step(nodeName, msg string) { o.ui.Step(nodeName, "%s", msg) }

func (o *winsObserver) warn(nodeName, msg string) { o.ui.Warn("node %s: %s", nodeName, msg) }

// winsNodeObserver is one node's hotswap.Observer.
type winsNodeObserver struct {
	o    *winsObserver
	node string
}

func (w *winsNodeObserver) Planned(p *hotswap.Plan) {
	for _, s := range p.Steps {
		w.o.step(w.node, fmt.Sprintf("plan: wins.exe: %s (%s)", s.Action, s.Reason))
	}
}

func (w *winsNodeObserver) Step(msg string) { w.o.step(w.node, msg) }

func (w *winsNodeObserver) Upload(it hotswap.Item) func(sent int64) {
	w.o.step(w.node, fmt.Sprintf("staging %s (%d bytes)", it.Staged(), it.Source.Size))
	return func(int64) {}
}
