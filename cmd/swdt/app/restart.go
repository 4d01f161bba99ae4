package app

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// addServiceTimeouts adds the timing flags of swdt restart and reboot,
// named and defaulted as swdt kubernetes's.
func addServiceTimeouts(fl *pflag.FlagSet, t *daytwo.ServiceTimeouts) {
	durationFlag(fl, &t.Stop, "stop-timeout", hotswap.DefaultStopTimeout, false, "how long a service may take to stop before its process is killed")
	durationFlag(fl, &t.Start, "start-timeout", hotswap.DefaultStartTimeout, false, "how long a service may take to reach Running")
	durationFlag(fl, &t.Settle, "settle", hotswap.DefaultSettle, true, "how long started services must stay Running before they count as up (0: not at all)")
	durationFlag(fl, &t.Health, "health-timeout", hotswap.DefaultHealthTimeout, false, "how long health checks are retried")
}

func newRestartCommand(e *env) *cobra.Command {
	var t daytwo.ServiceTimeouts
	cmd := &cobra.Command{
		Use:   "restart [NODE] SERVICE...",
		Short: "Restart services on a node and check that they come back",
		Long: `Restart Windows services on a node without swapping anything: each is
stopped (the services that depend on it first: Windows refuses to stop a
service while a dependent runs), then all of them are started again,
dependencies first, and the health checks the node file gives their
provisioners (wins's bridge checks for rancher-wins) run once they are
up. A service that ignores its stop control for --stop-timeout is killed.
A Stopped service is started. It uses the swap's machinery on the node:
another swdt run's lock is respected, and a restart cut short (a second
Ctrl-C, a lost connection) still asks every service it stopped to start
again; after a lost connection (through the Kubernetes API, restarting the
kubelet loses it) swdt reads the services back once the node answers. A
first Ctrl-C lets the restart finish, then exits 130.

NODE may be left out when --node names one or the file has one node.
--cluster-node NAME takes the Node NAME of the cluster a rollout file
names instead of NODE, reached through the Kubernetes API with no SSH
(swdt's HostProcess pod on it, as swdt rollout makes it).

Exit codes: 0 every service is Running and passed its checks; 1 one is
not, or the node could not be reached; 2 usage or config error, or a
service the node does not have (nothing stopped); 130 interrupted.`,
		Example: `  swdt restart node1 kubelet
  swdt restart node1 containerd kubelet -o json
  swdt restart --node node1 kube-proxy`,
		ValidArgsFunction: e.completeNodeThenServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRestart(cmd.Context(), e, args, t)
		},
	}
	addServiceTimeouts(cmd.Flags(), &t)
	e.addClusterNodeFlag(cmd)
	return cmd
}

func runRestart(ctx context.Context, e *env, args []string, t daytwo.ServiceTimeouts) error {
	spec, services, err := e.pickNode("restart", args, false)
	if err != nil {
		return err
	}
	abort, stop := e.interrupts(func(format string, args ...any) { e.ui.Warn(format, args...) }, nil)
	defer stop()
	rep, err := daytwo.Restart(ctx, spec, e.connect, services, daytwo.RestartOptions{ServiceTimeouts: t, Abort: abort,
		Step: func(msg string) { e.ui.Step(spec.Name, "%s", msg) },
		Warn: func(msg string) { e.ui.Warn("%s", msg) }})
	return report.PrintRestart(e.ui, spec.Name, rep, err)
}
