package app

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

func newRebootCommand(e *env) *cobra.Command {
	var o daytwo.RebootOptions
	cmd := &cobra.Command{
		Use:   "reboot [NODE]",
		Short: "Restart a node and wait for it and its services to come back",
		Long: `Restart a node's Windows (shutdown.exe /r through swdt's agent: nothing
else is sent) after setup says a reboot is needed. It refuses while
another swdt run holds the node's swap lock, or while a swap is unfinished.

With --wait, swdt waits until the node goes down (its SSH connection
drops), until SSH answers again, and until the services of the node file
(its provisioners' and, with spec.wins, rancher-wins) are Running, and
reports how long each took. Windows starts a service at boot only when its
start type is Automatic. Without --wait it returns once the reboot was
asked for.

NODE may be left out when --node names one or the file has one node.

Exit codes: 0 rebooted (and, with --wait, back with its services
Running); 1 the reboot was refused, or the node or a service did not
come back within --timeout; 2 usage or config error.`,
		Example: `  swdt reboot node1 --wait
  swdt reboot --node node1
  swdt reboot node1 --wait --timeout 20m -o json`,
		ValidArgsFunction: e.completeNode,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReboot(cmd.Context(), e, args, o)
		},
	}
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "wait for the node to come back with its services Running")
	durationFlag(cmd.Flags(), &o.Timeout, "timeout", 10*time.Minute, false, "with --wait, how long to wait for the node and its services")
	return cmd
}

func runReboot(ctx context.Context, e *env, args []string, o daytwo.RebootOptions) error {
	spec, rest, err := e.pickNode("reboot", args, false)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return exitcode.WithCode(exitcode.Usage, unknownArgs("reboot", rest))
	}
	o.Step = func(msg string) { e.ui.Step(spec.Name, "%s", msg) }
	o.Warn = func(msg string) { e.ui.Warn("%s", msg) }
	rep, err := daytwo.Reboot(ctx, spec, e.connect, o)
	return report.PrintReboot(e.ui, spec.Name, rep, err)
}
