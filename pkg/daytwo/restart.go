package daytwo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/target"
)

// ServiceTimeouts bound the stops, starts and health checks of swdt
// restart and swdt reboot.
type ServiceTimeouts struct {
	// Stop is how long a service may take to stop before its process is
	// killed; Start how long it may take to reach Running.
	Stop, Start time.Duration
	// Settle is how long a started service must stay Running.
	Settle time.Duration
	// Health is how long health checks are retried.
	Health time.Duration
}

// RestartOptions are Restart's settings and hooks.
type RestartOptions struct {
	ServiceTimeouts
	// Abort ends the restart op at once (a second Ctrl-C); the end of
	// Restart's ctx (a first one) lets it finish, so that the services it
	// stopped run again, and then makes Restart an error.
	Abort context.Context
	// Step is told what is happening ("restarting kubelet").
	Step func(msg string)
	// Warn receives what the user must see about the connection, naming
	// the node.
	Warn func(msg string)
}

// RestartReport is what Restart did.
type RestartReport struct {
	Node string `json:"node"`
	ops.ServiceRestartResponse
	DurationMs int64 `json:"durationMs"`
}

// Restart restarts services on the node spec: each is stopped (its
// running dependents first, which are started again too), then all are
// started, dependencies first, and the health checks the node file gives
// their provisioners (and wins's, for rancher-wins) run. A service that
// does not start or fails its checks makes the restart an error, with the
// report saying which; a service the node does not have stops nothing.
func Restart(ctx context.Context, spec *v1alpha1.Node, connect fleet.Connector, services []string, opts RestartOptions) (*RestartReport, error) {
	start := time.Now()
	rep := &RestartReport{Node: spec.Name}
	if len(services) == 0 {
		return rep, exitcode.WithCode(exitcode.Usage, errors.New("name the services to restart, for example kubelet"))
	}
	n, err := connect(ctx, spec, func(msg string) { opts.Warn("node " + spec.Name + ": " + msg) })
	if err != nil {
		return rep, fmt.Errorf("node %s: %w", spec.Name, err)
	}
	defer n.Close()
	// A connection that cannot be dialled again (the Kubernetes API's,
	// which the kubelet carries) may be cut by the restart itself: the
	// services' processes are read first, so that a read-back can tell a
	// service that was restarted from one still running as before. A
	// node that cannot say leaves the read-back without them.
	var before []ops.ServiceState
	if !n.Capabilities().Redial {
		before, _ = n.ServiceStatus(ctx, services)
	}
	req := ops.ServiceRestartRequest{
		Services:        services,
		Checks:          serviceChecks(spec, services),
		StopTimeoutMs:   int(opts.Stop.Milliseconds()),
		StartTimeoutMs:  int(opts.Start.Milliseconds()),
		SettleMs:        int(opts.Settle.Milliseconds()),
		HealthTimeoutMs: int(opts.Health.Milliseconds()),
	}
	opts.Step("restarting " + strings.Join(services, ", "))
	octx, cancel := hotswap.UntilAbort(ctx, opts.Abort)
	defer cancel()
	rep.ServiceRestartResponse, err = n.RestartServices(octx, req)
	if err != nil && node.ConnectionLost(err) && octx.Err() == nil {
		// The connection went during the restart (through the
		// Kubernetes API the kubelet carries it): the agent finishes the
		// restart on the node; what it did is read back from the node.
		opts.Warn(fmt.Sprintf("node %s: the restart's connection was lost (%v); the agent finishes the restart on the node: reading its services once the node answers again", spec.Name, err))
		err = restartReadBack(octx, n, services, before, &rep.ServiceRestartResponse, req)
	}
	rep.DurationMs = time.Since(start).Milliseconds()
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("interrupted; the restart in progress finished first: %w", ctx.Err())
	}
	if err != nil {
		err = fmt.Errorf("node %s: restart %s: %w", spec.Name, strings.Join(services, ", "), err)
		if errors.Is(err, ops.KindNotFound) {
			err = exitcode.WithCode(exitcode.Usage, err)
		}
		return rep, err
	}
	if len(rep.NotStarted) > 0 {
		var why []string
		for _, p := range rep.NotStarted {
			why = append(why, p.Service+": "+p.Error)
		}
		return rep, fmt.Errorf("node %s: restarted, but not running: %s (see swdt logs %s)", spec.Name, strings.Join(why, "; "), spec.Name)
	}
	return rep, nil
}

// restartReadBack fills resp from the services' states once the node
// answers again and every one of services is Running in a process other
// than its process before (when before has it), waiting at most what the
// restart itself could take (and a minute). Their health checks' results
// went with the connection: a service that runs is reported as
// restarted, one that does not, or still runs as before, as not started.
func restartReadBack(ctx context.Context, n *node.Node, services []string, before []ops.ServiceState, resp *ops.ServiceRestartResponse, req ops.ServiceRestartRequest) error {
	wait := time.Duration(req.StopTimeoutMs+req.StartTimeoutMs+req.SettleMs+req.HealthTimeoutMs)*time.Millisecond + time.Minute
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var lastErr error
	answered := false
	err := retry.Poll(wctx, rebootPoll, func(ctx context.Context) (bool, error) {
		states, err := n.ServiceStatus(ctx, services)
		if lastErr = err; err != nil {
			return false, nil // the node does not answer yet
		}
		answered = true
		resp.Services, resp.NotStarted = resp.Services[:0], nil
		for _, st := range states {
			pid := pidBefore(before, st.Service)
			resp.Services = append(resp.Services, ops.RestartedService{Service: st.Service, PIDBefore: pid, PIDAfter: st.PID, Status: st.Status})
			switch {
			case st.Status != "Running":
				resp.NotStarted = append(resp.NotStarted, ops.ServiceProblem{Service: st.Service, Error: "status " + cmp.Or(st.Status, "unknown") + " after the restart"})
			case pid != 0 && st.PID == pid:
				resp.NotStarted = append(resp.NotStarted, ops.ServiceProblem{Service: st.Service,
					Error: fmt.Sprintf("still runs as PID %d, as before the restart: the restart did not reach it", pid)})
			}
		}
		return len(resp.NotStarted) == 0, nil
	})
	if err != nil && !answered {
		return fmt.Errorf("the restart's connection was lost, and the node did not answer again within %s: %w", wait, cmp.Or(lastErr, err))
	}
	return nil // what is not running is in resp.NotStarted
}

// pidBefore is service's process in states, 0 when they do not have it.
func pidBefore(states []ops.ServiceState, service string) int {
	for _, st := range states {
		if strings.EqualFold(st.Service, service) {
			return st.PID
		}
	}
	return 0
}

// serviceChecks are the node file's health checks of services, by the
// name the user gave: every provisioner of the service contributes its
// own, and rancher-wins gets wins's.
func serviceChecks(spec *v1alpha1.Node, services []string) map[string][]ops.HealthCheckSpec {
	binaries := target.Provisioners(spec)
	if spec.Spec.Wins != nil {
		binaries = append(binaries, target.Wins(spec.Spec.Wins))
	}
	out := map[string][]ops.HealthCheckSpec{}
	for _, s := range services {
		for _, b := range binaries {
			if strings.EqualFold(b.Service, s) {
				out[s] = append(out[s], b.HealthChecks...)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
