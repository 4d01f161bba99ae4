package app

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ui"
)

// rebootJSON is `swdt reboot -o json` output.
type rebootJSON struct {
	docMeta
	Result string `json:"result"`
	*daytwo.RebootReport
	Error string `json:"error,omitempty"`
}

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
	if e.ui.Format() == ui.FormatJSON {
		doc := rebootJSON{docMeta: meta("Reboot"), Result: resultChanged, RebootReport: rep}
		if err != nil {
			doc.Result, doc.Error = resultFailed, err.Error()
		}
		if jerr := e.ui.JSON(doc); jerr != nil && err == nil {
			err = jerr
		}
		return err
	}
	if len(rep.Services) > 0 {
		var rows [][]string
		for _, s := range rep.Services {
			after := "-"
			if s.RunningAfterMs > 0 {
				after = ms(s.RunningAfterMs)
			}
			rows = append(rows, []string{s.Service, orDash(s.Status), orDash(s.StartType), pidText(s.PID), after})
		}
		if terr := e.ui.Table([]string{"SERVICE", "STATUS", "START TYPE", "PID", "RUNNING AFTER"}, rows); terr != nil && err == nil {
			err = terr
		}
	}
	switch {
	case err != nil:
	case !rep.Waited:
		e.ui.Success("node %s: reboot asked for (swdt reboot --wait waits for it)", spec.Name)
	case rep.ServicesRunningAfterMs > 0:
		e.ui.Success("node %s: down after %s, SSH back after %s, services Running after %s", spec.Name, ms(rep.DownAfterMs), ms(rep.SSHBackAfterMs), ms(rep.ServicesRunningAfterMs))
	default:
		e.ui.Success("node %s: down after %s, SSH back after %s", spec.Name, ms(rep.DownAfterMs), ms(rep.SSHBackAfterMs))
	}
	return err
}

func ms(n int64) string {
	return (time.Duration(n) * time.Millisecond).Round(10 * time.Millisecond).String()
}
