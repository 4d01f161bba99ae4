package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/ui"
)

// logsJSON is one `swdt logs -o json` document: one per read, so that
// --follow prints a stream of them.
type logsJSON struct {
	docMeta
	Node     string                    `json:"node"`
	Services []ops.ServiceLogsResponse `json:"services"`
}

type logsOptions struct {
	lines    int
	since    time.Duration
	follow   bool
	interval time.Duration
}

func newLogsCommand(e *env) *cobra.Command {
	var o logsOptions
	cmd := &cobra.Command{
		Use:   "logs NODE [SERVICE...]",
		Short: "Show a node's service logs and their service control manager events",
		Long: `Show the last lines of each service's log file and the System event log
entries the service control manager wrote about it (started, stopped,
terminated unexpectedly...), without RDP. Without SERVICE: the services of
the node's provisioners, and wins when spec.wins is set.

The log file is the one the service's command line names with --log-file
(or klog's --log_file), else the file nssm redirects the program's stderr
or stdout to (AppStderr, AppStdout). A service that logs nowhere else
shows its events only.

--follow reads again every --interval until Ctrl-C, printing only what is
new; a log file that was truncated or rotated is read from its start.
With -o json every read is one JSON document on its own line.`,
		Example: `  swdt logs node1
  swdt logs node1 kubelet -n 200
  swdt logs node1 kubelet containerd --follow`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt logs needs a node: %s", cmd.Use))
			}
			return nil
		},
		ValidArgsFunction: e.completeNode,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLogs(cmd.Context(), e, args[0], args[1:], o)
		},
	}
	f := cmd.Flags()
	f.IntVarP(&o.lines, "lines", "n", 50, "how many of each log file's last lines to show")
	f.DurationVar(&o.since, "since", time.Hour, "show events written this long ago and later")
	f.BoolVarP(&o.follow, "follow", "f", false, "keep reading and print what is new")
	f.DurationVar(&o.interval, "interval", 2*time.Second, "with --follow, how often to read")
	return cmd
}

func runLogs(ctx context.Context, e *env, name string, services []string, o logsOptions) error {
	if o.lines < 0 || o.since <= 0 || o.interval < 100*time.Millisecond {
		return exitcode.WithCode(exitcode.Usage, errors.New("--lines must be 0 or more, --since positive and --interval at least 100ms"))
	}
	spec, err := e.pickNode(name)
	if err != nil {
		return err
	}
	if len(services) == 0 {
		services = nodeServices(spec)
	}
	if len(services) == 0 {
		return exitcode.WithCode(exitcode.Usage, fmt.Errorf("node %s has no provisioners and no wins: name the services to show", spec.Name))
	}
	n, err := e.connect(ctx, spec, func(msg string) { e.ui.Warn("node %s: %s", spec.Name, msg) })
	if err != nil {
		return err
	}
	defer n.Close()

	reqs := make([]ops.ServiceLogsRequest, len(services))
	for i, s := range services {
		reqs[i] = ops.ServiceLogsRequest{Service: s, Lines: o.lines, Offset: -1, MaxEvents: 50}
	}
	since := time.Now().Add(-o.since)
	for first := true; ; first = false {
		doc := logsJSON{docMeta: meta("ServiceLogs"), Node: spec.Name}
		for i := range reqs {
			if first {
				reqs[i].Since = since
			}
			resp, err := n.ServiceLogs(ctx, reqs[i])
			if err != nil {
				if o.follow && errors.Is(err, context.Canceled) {
					return nil
				}
				return fmt.Errorf("node %s: read the log of %s: %w", spec.Name, reqs[i].Service, err)
			}
			reqs[i].Offset, reqs[i].Since = resp.Offset, resp.Now
			doc.Services = append(doc.Services, resp)
		}
		if err := printLogs(e.ui, doc, first, o.follow, len(services) > 1); err != nil {
			return err
		}
		if !o.follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // Ctrl-C ends a follow: that is how it is used
		case <-time.After(o.interval):
		}
	}
}

// nodeServices are the services swdt manages on a node.
func nodeServices(spec *v1alpha1.Node) []string {
	var out []string
	for _, p := range spec.Spec.Kubernetes.Provisioners {
		if !slices.Contains(out, p.ServiceName()) {
			out = append(out, p.ServiceName())
		}
	}
	if spec.Spec.Wins != nil {
		out = append(out, ops.WinsService)
	}
	return out
}

// printLogs prints one read: with headers the first time, prefixed by the
// service's name when there are several.
func printLogs(u *ui.UI, doc logsJSON, first, follow, prefix bool) error {
	if u.Format() == ui.FormatJSON {
		if follow {
			return u.JSONLine(doc)
		}
		return u.JSON(doc)
	}
	for _, s := range doc.Services {
		if first {
			switch {
			case s.LogFile == "":
				u.Step(doc.Node, "%s (%s): no log file (no --log-file in its command line, no nssm redirection); events only", s.Service, s.Status)
			case s.LogError != "":
				u.Warn("node %s: %s (%s): %s: %s", doc.Node, s.Service, s.Status, s.LogFile, s.LogError)
			default:
				u.Step(doc.Node, "%s (%s): %s", s.Service, s.Status, s.LogFile)
			}
		}
		if s.EventsError != "" {
			u.Warn("node %s: %s: cannot read the event log: %s", doc.Node, s.Service, s.EventsError)
		}
		lead := ""
		if prefix {
			lead = s.Service + " | "
		}
		for _, ev := range s.Events {
			u.Printf("%sevent: %s\n", lead, ev)
		}
		for _, l := range s.Lines {
			u.Printf("%s%s\n", lead, l)
		}
	}
	return nil
}
