package daytwo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
)

// LogsOptions are what Logs reads and how often.
type LogsOptions struct {
	// Services are the Windows services whose logs to read; none means
	// the services swdt manages on the node: its provisioners' and, with
	// spec.wins, wins's.
	Services []string
	// Lines is how many of each log file's last lines the first read
	// returns.
	Lines int
	// Since is how far back the first read looks for events.
	Since time.Duration
	// Follow reads again every Interval, returning only what is new, until
	// ctx is cancelled. A connection that is lost (a reboot) is dialled
	// again until the node answers, and the follow goes on from where it
	// was.
	Follow   bool
	Interval time.Duration
	// Warn receives what the user must see about the connection, naming
	// the node.
	Warn func(msg string)
}

// Read is one read of the logs of a node's services.
type Read struct {
	// Node is the node's name.
	Node string
	// First says this is the first read (with Follow, the others return
	// only what is new).
	First bool
	// Services are the logs, one per service, in the order asked.
	Services []ServiceLog
	// Absent are the services asked for that do not exist on the node
	// (found by the first read; the others skip them).
	Absent []string
}

// ServiceLog is one service's log as read now: the agent's answer, whose
// fields are those of swdt logs -o json.
type ServiceLog = ops.ServiceLogsResponse

// Logs reads the logs of services on the node spec and hands each read
// to show: once, or with opts.Follow again every opts.Interval until ctx
// is cancelled, which ends a follow without error. A node with no
// services to name is a usage error, before it is contacted.
func Logs(ctx context.Context, spec *v1alpha1.Node, connect fleet.Connector, opts LogsOptions, show func(Read) error) error {
	services := opts.Services
	if len(services) == 0 {
		services = NodeServices(spec)
	}
	if len(services) == 0 {
		return exitcode.WithCode(exitcode.Usage, fmt.Errorf("node %s has no provisioners and no wins: name the services to show", spec.Name))
	}
	n, err := connect(ctx, spec, func(msg string) { opts.Warn("node " + spec.Name + ": " + msg) })
	if err != nil {
		return err
	}
	defer n.Close()

	reqs := make([]ops.ServiceLogsRequest, len(services))
	for i, s := range services {
		reqs[i] = ops.ServiceLogsRequest{Service: s, Lines: opts.Lines, Offset: -1, MaxEvents: 50}
	}
	since := time.Now().Add(-opts.Since)
	for first := true; ; first = false {
		read := Read{Node: spec.Name, First: first}
		present := reqs[:0]
		for i := range reqs {
			if first {
				reqs[i].Since = since
			}
			resp, err := n.ServiceLogs(ctx, reqs[i])
			for opts.Follow && !first && connectionLost(err) && ctx.Err() == nil {
				// A reboot, a restarted sshd, a network blip: follow on
				// once the node answers again, from where it was.
				opts.Warn(fmt.Sprintf("node %s: the connection was lost (%v); reconnecting until the node answers again (Ctrl-C to stop)", spec.Name, err))
				if err := reconnect(ctx, n); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return fmt.Errorf("node %s: reconnect: %w", spec.Name, err)
				}
				opts.Warn(fmt.Sprintf("node %s: reconnected; following again", spec.Name))
				resp, err = n.ServiceLogs(ctx, reqs[i])
			}
			switch {
			case first && errors.Is(err, ops.KindNotFound):
				// One service missing (wins named in the file but not
				// deployed yet) must not hide the others' logs.
				read.Absent = append(read.Absent, reqs[i].Service)
				continue
			case err != nil:
				if opts.Follow && errors.Is(err, context.Canceled) {
					return nil
				}
				return fmt.Errorf("node %s: read the log of %s: %w", spec.Name, reqs[i].Service, err)
			}
			reqs[i].Offset, reqs[i].Since = resp.Offset, resp.Now
			read.Services = append(read.Services, resp)
			present = append(present, reqs[i])
		}
		reqs = present
		if len(reqs) == 0 {
			return fmt.Errorf("node %s has no service %s: check the names with 'swdt status', or deploy them first",
				spec.Name, strings.Join(read.Absent, ", "))
		}
		if err := show(read); err != nil {
			return err
		}
		if !opts.Follow {
			return nil
		}
		if retry.Sleep(ctx, opts.Interval) != nil {
			return nil // Ctrl-C ends a follow: that is how it is used
		}
	}
}

// connectionLost reports whether err is the node's connection failing,
// not the op.
func connectionLost(err error) bool {
	return node.ConnectionLost(err)
}

// NodeServices are the services swdt manages on a node, as its node file
// names them: its provisioners' and, with spec.wins, wins's.
func NodeServices(spec *v1alpha1.Node) []string {
	var out []string
	for _, p := range spec.Spec.Kubernetes.Provisioners {
		if svc := p.ServiceName(); svc != "" && !slices.Contains(out, svc) { // "": service None
			out = append(out, svc)
		}
	}
	if spec.Spec.Wins != nil {
		out = append(out, ops.WinsService)
	}
	return out
}
