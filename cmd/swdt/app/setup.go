package app

import (
	"context"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/setup"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// setupFlags are the flags of `swdt setup`.
type setupFlags struct {
	dryRun bool
}

func newSetupCommand(e *env) *cobra.Command {
	var f setupFlags
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Bootstrap nodes: Remote Desktop, Chocolatey and packages, SSH keys",
		Long: `Bring every node of the -c file to its spec.setup, in parallel:

  enableRDP       Remote Desktop and its firewall rules on (default) or off
  chocoPackages   Chocolatey (installed when missing) and these packages
  authorizedKeys  public keys appended to administrators_authorized_keys,
                  whose ACL is restricted to Administrators and SYSTEM

The facts are gathered in one round trip, the plan is shown, and only what
differs is changed and then read back. Running it again changes nothing.
The account must be an administrator on the node.

Exit codes: 0 all steps succeeded, 3 some steps or nodes failed, 1 nothing
could be done, 2 the file or a public key file is invalid.`,
		Example: "  swdt setup -c node.yaml --dry-run\n  swdt setup -c node.yaml -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSetup(cmd.Context(), e, f)
		},
	}
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "show the plan and change nothing")
	return cmd
}

func runSetup(ctx context.Context, e *env, f setupFlags) error {
	res, err := e.loadConfig(config.PrivateKeyFile | config.AuthorizedKeyFiles)
	if err != nil {
		return err
	}
	obs := &setupObserver{ui: e.ui}
	results, err := setup.Apply(ctx, res.Nodes, e.connect, setup.Options{DryRun: f.dryRun, Observer: obs}, obs.warn)
	if err != nil {
		return err
	}
	if err := report.PrintSetup(e.ui, results); err != nil {
		return err
	}
	for _, r := range results {
		if r.Err != nil {
			continue
		}
		if steps := r.Value.RebootRequired(); len(steps) > 0 {
			e.ui.Warn("node %s needs a reboot to finish: %s", r.Node, strings.Join(steps, ", "))
		}
	}
	if err := fleet.Err(results, setup.Failures); err != nil {
		return err
	}
	switch {
	case f.dryRun:
		e.ui.Success("dry run: nothing was changed")
	default:
		e.ui.Success("setup done on %d node(s)", len(results))
	}
	return nil
}

// setupObserver shows progress on stderr; nodes run concurrently, so it
// serialises access to the UI.
type setupObserver struct {
	mu sync.Mutex
	ui *ui.UI
}

func (o *setupObserver) Planned(r *setup.Report) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := r.Facts.Node
	version := n.ProductName
	if n.DisplayVersion != "" {
		version += " " + n.DisplayVersion
	}
	o.ui.Step(r.Node, "%s (%s, build %s.%d) as %s", n.Hostname, version, n.CurrentBuild, n.UBR, n.Username)
	todo := 0
	for _, s := range r.Steps {
		if s.Result == setup.WouldChange {
			o.ui.Step(r.Node, "plan: %s: %s", s.Name, s.Detail)
			todo++
		}
	}
	if todo == 0 {
		o.ui.Step(r.Node, "plan: nothing to change")
	}
}

func (o *setupObserver) StepDone(nodeName string, s setup.Step) {
	if s.Result == setup.Unchanged {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ui.Step(nodeName, "%s %s: %s", s.Name, s.Result, s.Detail)
}

func (o *setupObserver) warn(msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ui.Warn("%s", msg)
}
