package app

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/provision"
	"sigs.k8s.io/swdt/pkg/ui/report"
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
		return provision.Names(res.Nodes), cobra.ShellCompDirectiveNoFileComp
	})
	fl.BoolVar(&f.force, "force", false, "replace binaries even when the node has the same bytes, hash every local source again, and let register take flags and dependencies away from a service")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan and change nothing")
	fl.BoolVar(&f.watch, "watch", false, "after the run, re-swap a provisioner whenever its local source changes")
	durationFlag(fl, &f.debounce, "debounce", 500*time.Millisecond, true, "with --watch: how long a source must be quiet before it is swapped")
	f.swap.add(fl)
	f.transfer.add(fl)
	f.download.add(fl)
	fl.IntVar(&f.parallel, "parallel", 4, "uploads at a time per node")
	fl.BoolVar(&f.snapshot, "snapshot", false, "snapshot each node's VM (spec.vm) before the swap; with --watch, before every swap")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "where downloaded sources are cached (default: <user cache dir>/swdt)")
	_ = cmd.MarkFlagDirname("cache-dir")
	return cmd
}

func runKubernetes(ctx context.Context, e *env, f *kubernetesFlags) error {
	res, err := e.loadConfig(config.PrivateKeyFile | config.ProvisionerSources)
	if err != nil {
		return err
	}
	progress := e.sharedProgress()
	if f.watch {
		progress.Timestamps()
		e.ui.Stream()
	}
	obs := &kubeObserver{progress: progress}
	abort, stop := e.interrupts(progress.Warn, obs.swapping)
	defer stop()
	defer context.AfterFunc(ctx, obs.interrupted)()
	opts := provision.Options{
		Only: f.only, Force: f.force, DryRun: f.dryRun, Watch: f.watch, Debounce: f.debounce,
		CacheDir: f.cacheDir, Resolver: f.download.resolver(f.cacheDir, f.force),
		Swap:     f.swap.options(),
		Observer: obs,
		Report: func(results []fleet.Result[provision.NodeReport]) error {
			return report.PrintKubernetes(e.ui, f.dryRun, results)
		},
	}
	opts.Swap.Parallel, opts.Swap.Abort, opts.Swap.Transfer = f.parallel, abort, f.transfer.transfer(f.cacheDir)
	if f.snapshot {
		if err := checkSnapshotNodes(res.Path, res.Nodes); err != nil {
			return err
		}
		opts.Snapshot = func(ctx context.Context, spec *v1alpha1.Node, provisioners []string) (string, error) {
			return e.snapshotVM(ctx, progress, spec, provisioners)
		}
	}
	err = provision.Run(ctx, res.Nodes, e.connect, opts)
	if f.watch && !obs.cutShort() {
		return err // Ctrl-C while watching is how a watch ends
	}
	return finishedInterrupted(ctx, err)
}
