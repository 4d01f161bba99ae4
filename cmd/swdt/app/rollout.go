package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/kubeconn"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/rollout"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

type rolloutFlags struct {
	dryRun   bool
	reset    bool
	swap     swapFlags
	download downloadFlags
	cacheDir string
}

func newRolloutCommand(e *env) *cobra.Command {
	f := &rolloutFlags{}
	cmd := &cobra.Command{
		Use:   "rollout",
		Short: "Swap a build across the Windows Nodes of a cluster, a few at a time",
		Long: `Swap the provisioners of the -c file on every Node its
spec.kubernetes.rollout selects (always kubernetes.io/os=windows), at most
maxUnavailable at a time, in the order of their names. Each Node is reached
through the Kubernetes API (transport: Kubernetes, the default: a HostProcess
pod on it and pods/exec; the kubeconfig is all it needs) or over SSH
(transport: SSH, with spec.credentials):

  1. check that the kubeconfig's user may do all of it; nothing changes
     otherwise;
  2. with drain: cordon the Node and evict its pods (a PodDisruptionBudget
     that refuses is asked again until drain.timeout);
  3. hot-swap the build, as swdt kubernetes does;
  4. wait for the cluster to confirm it: the new kubeletVersion, a Lease
     renewal, Ready as before;
  5. uncordon the Node.

A Node that fails is rolled back and the rollout stops there: the Nodes
after it are left untouched. The rollout's state is kept in the cluster
(ConfigMap swdt-system/swdt-rollout-NAME): run the command again to resume an
interrupted rollout where it stopped, from any machine. --reset removes
what the rollout left in the cluster: its state, and swdt's namespace with
the transport's pods (only the selected Nodes' pods while another rollout's
state is kept there). See docs/rollout.md.

Exit codes: 0 every Node runs the build, 1 failure (nothing rolled, or
the user lacks a right), 2 usage or config error, 3 the rollout stopped
after some Nodes, 130 interrupted (run it again to resume).`,
		Example: "  swdt rollout -c rollout.yaml --dry-run\n  swdt rollout -c rollout.yaml\n  swdt rollout -c rollout.yaml -o json\n  swdt rollout -c rollout.yaml --reset",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRollout(cmd.Context(), e, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.dryRun, "dry-run", false, "select the Nodes and say what would be rolled; change nothing")
	fl.BoolVar(&f.reset, "reset", false, "remove the rollout's state and the transport's namespace and pods from the cluster; the Nodes are not touched")
	cmd.MarkFlagsMutuallyExclusive("dry-run", "reset")
	f.swap.add(fl)
	f.download.add(fl)
	fl.StringVar(&f.cacheDir, "cache-dir", "", "where downloaded sources are cached (default: <user cache dir>/swdt)")
	_ = cmd.MarkFlagDirname("cache-dir")
	return cmd
}

func runRollout(ctx context.Context, e *env, f *rolloutFlags) error {
	res, err := e.loadConfig(config.PrivateKeyFile | config.ProvisionerSources)
	if err != nil {
		return err
	}
	spec, c, kopts, err := rolloutCluster(res)
	if err != nil {
		return err
	}
	rs := spec.Spec.Kubernetes.Rollout
	if f.reset {
		return resetRollout(ctx, e, spec, rollout.Options{Cluster: c}, kopts)
	}
	progress := e.ui.NewProgress()
	abort, stop := e.interrupts(progress.Warn, nil)
	defer stop()
	swap := f.swap.options()
	swap.Abort = abort
	opts := rollout.Options{Cluster: c, Resolver: f.download.resolver(f.cacheDir, false), Swap: swap, DryRun: f.dryRun,
		Observer: rolloutObserver{progress}}
	if rs.Transport == v1alpha1.TransportSSH {
		e.promptOnce.Do(func() { e.passphrase = e.ui.PassphrasePrompt(e.streams.In) })
		opts.Connect = rollout.SSHConnector(c, spec, node.ConnectOptions{Logger: e.ui.Logger(), Passphrase: e.passphrase, NodeFile: e.configPath})
	} else {
		opts.Connect, opts.Access = rollout.KubeConnector(kopts, e.ui.Logger()), rollout.KubeRights()
	}
	rep, err := rollout.Run(ctx, spec, opts)
	if rep != nil {
		if perr := report.PrintRollout(e.ui, rep); perr != nil {
			return perr
		}
	}
	switch {
	case ctx.Err() != nil:
		return exitcode.WithCode(exitcode.Interrupted, errors.New("interrupted: the swap in progress was finished; run swdt rollout again to resume"))
	case errors.Is(err, rollout.ErrStopped) && rolled(rep):
		return exitcode.WithCode(exitcode.Partial, err)
	}
	return err
}

// resetRollout removes what the rollout left in the cluster and says what.
func resetRollout(ctx context.Context, e *env, spec *v1alpha1.Node, opts rollout.Options, kopts kubeconn.Options) error {
	rep, err := rollout.Reset(ctx, spec, opts, kopts)
	if err != nil {
		return fmt.Errorf("reset rollout %s: %w", spec.Name, err)
	}
	state := "no state was kept"
	if rep.State {
		state = "deleted its state (ConfigMap " + rollout.Namespace + "/" + rollout.ConfigMapName(spec.Name) + ")"
	}
	switch {
	case len(rep.Kept) > 0:
		e.ui.Success("rollout %s: %s; deleted the agent pods of %d Node(s); namespace %s kept for the state of %s",
			spec.Name, state, len(rep.Pods), rollout.Namespace, strings.Join(rep.Kept, ", "))
	case rep.Namespace:
		e.ui.Success("rollout %s: %s; removed swdt's pods and account from namespace %s, and the namespace when swdt created it", spec.Name, state, rollout.Namespace)
	default:
		e.ui.Success("rollout %s: %s; namespace %s was not there", spec.Name, state, rollout.Namespace)
	}
	return nil
}

// rolloutNode is the one document of the file with a rollout section.
func rolloutNode(res *config.Result) (*v1alpha1.Node, error) {
	var with []*v1alpha1.Node
	for i := range res.Nodes {
		if res.Nodes[i].Spec.Kubernetes.Rollout != nil {
			with = append(with, &res.Nodes[i])
		}
	}
	if len(with) != 1 {
		return nil, exitcode.WithCode(exitcode.Usage, fmt.Errorf("%s has %d nodes with spec.kubernetes.rollout, want one: it selects the Nodes to roll (docs/rollout.md)", res.Path, len(with)))
	}
	return with[0], nil
}

// rolloutCluster is the file's rollout node, its cluster, and the options
// of the transport that reaches the cluster's Nodes through its API (it
// reads the very kubeconfig and context the rollout does).
func rolloutCluster(res *config.Result) (*v1alpha1.Node, *cluster.Cluster, kubeconn.Options, error) {
	spec, err := rolloutNode(res)
	if err != nil {
		return nil, nil, kubeconn.Options{}, err
	}
	rs := spec.Spec.Kubernetes.Rollout
	c, err := cluster.Connect(rs.Kubeconfig, rs.Context)
	if err != nil {
		return nil, nil, kubeconn.Options{}, fmt.Errorf("spec.kubernetes.rollout: %w", err)
	}
	return spec, c, kubeconn.Options{Kubeconfig: c.Source, Context: c.Context, Image: rs.Image}, nil
}

// rolled reports whether the rollout took some Node to the build.
func rolled(rep *rollout.Report) bool {
	for _, n := range rep.Nodes {
		if n.Result == rollout.ResultChanged || n.Result == rollout.ResultDoneBefore || n.Result == rollout.ResultUnchanged {
			return true
		}
	}
	return false
}

// rolloutObserver shows each Node's steps.
type rolloutObserver struct{ p *ui.Progress }

func (o rolloutObserver) Step(node, msg string) { o.p.Step(node, "%s", msg) }
func (o rolloutObserver) Warn(msg string)       { o.p.Warn("%s", msg) }
