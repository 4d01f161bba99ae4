package app

import (
	"context"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/ui/report"
	"sigs.k8s.io/swdt/pkg/wins"
)

// winsFlags are the flags of `swdt wins` and its subcommands.
type winsFlags struct {
	deep     bool
	dryRun   bool
	swap     swapFlags
	download downloadFlags
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
			return runWinsOn(cmd.Context(), e, wins.RunOptions{Verb: wins.VerbVerify, Deploy: wins.Options{Deep: f.deep}}, config.PrivateKeyFile, "verified")
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
			return runWinsOn(cmd.Context(), e, wins.RunOptions{Verb: wins.VerbUninstall}, config.PrivateKeyFile, "uninstalled")
		},
	}
}

func runWins(ctx context.Context, e *env, f winsFlags) error {
	done := "deployed"
	if f.dryRun {
		done = "planned"
	}
	abort, stop := e.interrupts(e.ui.Warn, nil)
	defer stop()
	swap := f.swap.options()
	swap.Abort, swap.Command = abort, "swdt wins"
	return finishedInterrupted(ctx, runWinsOn(ctx, e, wins.RunOptions{Verb: wins.VerbDeploy, Deploy: wins.Options{Deep: f.deep, DryRun: f.dryRun, Swap: swap,
		Resolver: f.download.resolver("", false)}}, config.PrivateKeyFile|config.WinsSource, done))
}

// runWinsOn runs one verb of swdt wins on every node, prints the reports
// and turns them into an exit code.
func runWinsOn(ctx context.Context, e *env, opts wins.RunOptions, files config.FileKind, done string) error {
	res, err := e.loadConfig(files)
	if err != nil {
		return err
	}
	opts.Observer, opts.NodeFile = winsObserver{ui: e.ui}, res.Path
	results, err := wins.Run(ctx, res.Nodes, e.connect, opts)
	if err != nil {
		return err
	}
	if err := report.PrintWins(e.ui, results); err != nil {
		return err
	}
	if err := fleet.Err(results, wins.Failures); err != nil {
		return err
	}
	e.ui.Success("wins %s on %d node(s)", done, len(results))
	return nil
}

// winsObserver shows progress on stderr (ui.UI is safe for the nodes'
// concurrent use).
type winsObserver struct{ ui *ui.UI }

func (o winsObserver) Step(node, msg string) { o.ui.Step(node, "%s", msg) }
func (o winsObserver) Warn(msg string)       { o.ui.Warn("%s", msg) }
