package app

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

type logsOptions struct {
	lines    int
	since    time.Duration
	follow   bool
	interval time.Duration
}

func newLogsCommand(e *env) *cobra.Command {
	var o logsOptions
	cmd := &cobra.Command{
		Use:   "logs [NODE] [SERVICE...]",
		Short: "Show a node's service logs and their service control manager events",
		Long: `Show the last lines of each service's log file and the System event log
entries the service control manager wrote about it (started, stopped,
terminated unexpectedly...), without RDP. Without SERVICE: the services of
the node's provisioners, and wins when spec.wins is set; a service of
those the node does not have (wins not deployed yet) is noted and
skipped. NODE may be left out when --node names one or the -c file has
only one.

The log file is the one the service's command line names with --log-file
(containerd's, klog's --log_file, or kube-log-runner's -log-file, which
swdt join gives the kubelet and kube-proxy), else the file nssm redirects
the program's stderr or stdout to (AppStderr, AppStdout). A service that
logs nowhere else shows its events only.

--cluster-node NAME takes the Node NAME of the cluster a rollout file
names instead of NODE, reached through the Kubernetes API with no SSH
(swdt's HostProcess pod on it, as swdt rollout makes it).

--follow reads again every --interval until Ctrl-C, printing only what is
new; a log file that was truncated or rotated is read from its start. A
connection that drops (the node reboots, sshd restarts) is dialled again
until the node answers, and the follow goes on from where it was.
With -o json every read is one JSON document on its own line.`,
		Example: `  swdt logs node1
  swdt logs node1 kubelet -n 200
  swdt logs node1 kubelet containerd --follow
  swdt logs -c rollout.yaml --cluster-node win-01 kubelet`,
		ValidArgsFunction: e.completeNodeThenServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLogs(cmd.Context(), e, args, o)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&o.lines, "lines", "n", 50, "how many of each log file's last lines to show")
	f.DurationVar(&o.since, "since", time.Hour, "show events written this long ago and later")
	f.BoolVarP(&o.follow, "follow", "f", false, "keep reading and print what is new")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "with --follow, how often to read")
	e.addClusterNodeFlag(cmd)
	return cmd
}

func runLogs(ctx context.Context, e *env, args []string, o logsOptions) error {
	if o.lines < 0 || o.since <= 0 || o.interval < 100*time.Millisecond {
		return exitcode.WithCode(exitcode.Usage, errors.New("--lines must be 0 or more, --since positive and --interval at least 100ms"))
	}
	spec, services, err := e.pickNode("logs", args, false)
	if err != nil {
		return err
	}
	if o.follow {
		e.ui.Stream()
	}
	err = daytwo.Logs(ctx, spec, e.connect, daytwo.LogsOptions{Services: services, Lines: o.lines, Since: o.since,
		Follow: o.follow, Interval: o.interval, Warn: func(msg string) { e.ui.Warn("%s", msg) }},
		func(r daytwo.Read) error { return report.PrintLogs(e.ui, r) })
	return failureDocument(e, report.KindLogs, spec.Name, err)
}

// failureDocument prints, with -o json, the document of a one-node verb
// whose report has no room for an error (logs, port-forward) when it
// failed on node, and returns err. A usage error prints none, as with
// every verb.
func failureDocument(e *env, kind, node string, err error) error {
	if err == nil || exitcode.Code(err) == exitcode.Usage {
		return err
	}
	if perr := report.PrintFailure(e.ui, kind, node, err); perr != nil {
		e.ui.Warn("%v", perr)
	}
	return err
}
