package daytwo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
)

// rebootPoll is the pause between two tries to reach a rebooting node,
// and between two reads of its services.
const rebootPoll = time.Second

// RebootOptions are Reboot's settings and hooks.
type RebootOptions struct {
	// Wait waits for the node to go down, for SSH to answer again and
	// for the node file's services to be Running.
	Wait bool
	// Timeout bounds the whole wait.
	Timeout time.Duration
	// Step is told what is happening.
	Step func(msg string)
	// Warn receives what the user must see, naming the node.
	Warn func(msg string)
}

// BootedService is one of the node file's services after the reboot.
type BootedService struct {
	ops.ServiceState
	// RunningAfterMs is from the reboot's request to when the service
	// was first seen Running (0 when it was not).
	RunningAfterMs int64 `json:"runningAfterMs"`
}

// RebootReport is what Reboot saw, each time from the reboot's request.
type RebootReport struct {
	Node string `json:"node"`
	// Waited is false when swdt only asked for the reboot.
	Waited bool `json:"waited"`
	// DownAfterMs is when the SSH connection dropped, SSHBackAfterMs when
	// a new one worked and ServicesRunningAfterMs when the last service
	// was Running.
	DownAfterMs            int64           `json:"downAfterMs,omitempty"`
	SSHBackAfterMs         int64           `json:"sshBackAfterMs,omitempty"`
	ServicesRunningAfterMs int64           `json:"servicesRunningAfterMs,omitempty"`
	Services               []BootedService `json:"services"`
}

// Reboot restarts the node spec through its agent (which refuses while
// another swdt run holds the node's lock or a swap is unfinished). With
// opts.Wait it then waits, within opts.Timeout, for the connection to
// drop, for SSH to answer again, and for the services of the node file
// (its provisioners', and rancher-wins with spec.wins) to be Running,
// and reports how long each took. A service the node does not have is a
// warning, not waited for.
func Reboot(ctx context.Context, spec *v1alpha1.Node, connect fleet.Connector, opts RebootOptions) (*RebootReport, error) {
	rep := &RebootReport{Node: spec.Name, Services: []BootedService{}}
	warn := func(msg string) { opts.Warn("node " + spec.Name + ": " + msg) }
	if opts.Wait && opts.Timeout <= 0 {
		return rep, exitcode.WithCode(exitcode.Usage, fmt.Errorf("--timeout must be positive, not %s", opts.Timeout))
	}
	n, err := connect(ctx, spec, warn)
	if err != nil {
		return rep, fmt.Errorf("node %s: %w", spec.Name, err)
	}
	defer n.Close()
	dropped, err := n.Dropped()
	if err != nil {
		return rep, fmt.Errorf("node %s: %w", spec.Name, err)
	}
	opts.Step("rebooting")
	start := time.Now()
	if _, err := n.Reboot(ctx, ops.NodeRebootRequest{}); err != nil {
		if !opts.Wait || !errors.Is(err, node.ErrConnectionLost) {
			return rep, fmt.Errorf("node %s: reboot: %w", spec.Name, err)
		}
		// Windows may end sshd before the op's answer is out.
		warn("the connection dropped before the reboot op answered: taken as the node going down")
	}
	if !opts.Wait {
		return rep, nil
	}
	rep.Waited = true
	since := func() int64 { return max(time.Since(start).Milliseconds(), 1) }
	wctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	stopped := func(what string) error {
		if ctx.Err() != nil {
			return fmt.Errorf("node %s: interrupted while waiting %s", spec.Name, what)
		}
		return fmt.Errorf("node %s: the reboot was asked for, but swdt waited %s for %s (--timeout)", spec.Name, opts.Timeout, what)
	}

	select {
	case <-dropped:
	case <-wctx.Done():
		return rep, stopped("the node to go down: it may not restart (a pending update, a shutdown blocked by a program)")
	}
	rep.DownAfterMs = since()
	opts.Step(fmt.Sprintf("down after %s; waiting for SSH", ms(rep.DownAfterMs)))

	if err := reconnect(wctx, n); err != nil {
		if wctx.Err() != nil {
			return rep, stopped(fmt.Sprintf("SSH to answer again (%v)", err))
		}
		return rep, fmt.Errorf("node %s: after the reboot: %w", spec.Name, err)
	}
	rep.SSHBackAfterMs = since()

	services := NodeServices(spec)
	if len(services) == 0 {
		opts.Step(fmt.Sprintf("SSH back after %s; the node file names no service to wait for", ms(rep.SSHBackAfterMs)))
		return rep, nil
	}
	opts.Step(fmt.Sprintf("SSH back after %s; waiting for %s", ms(rep.SSHBackAfterMs), strings.Join(services, ", ")))
	byName := map[string]*BootedService{}
	for _, s := range services {
		rep.Services = append(rep.Services, BootedService{ServiceState: ops.ServiceState{Service: s}})
	}
	for i := range rep.Services {
		byName[rep.Services[i].Service] = &rep.Services[i]
	}
	var lastErr error
	err = retry.Poll(wctx, rebootPoll, func(ctx context.Context) (bool, error) {
		states, err := n.ServiceStatus(ctx, services)
		if lastErr = err; err != nil {
			return false, nil // read again until the timeout
		}
		waiting := services[:0:0]
		for _, st := range states {
			b := byName[st.Service]
			b.ServiceState = st
			switch {
			case !st.Exists:
				if b.RunningAfterMs == 0 {
					warn(fmt.Sprintf("service %s does not exist on the node: not waited for", st.Service))
					b.RunningAfterMs = -1
				}
			case st.Status == "Running" && b.RunningAfterMs <= 0:
				b.RunningAfterMs = since()
			case st.Status != "Running":
				waiting = append(waiting, st.Service)
			}
		}
		services = waiting
		return len(waiting) == 0, nil
	})
	if err != nil {
		return rep, stopped(notRunning(rep.Services, lastErr))
	}
	for i := range rep.Services {
		if rep.Services[i].RunningAfterMs < 0 {
			rep.Services[i].RunningAfterMs = 0
		}
	}
	rep.ServicesRunningAfterMs = since()
	return rep, nil
}

// reconnect dials the node again until it answers, as long as the
// failure is that it cannot be reached (an authentication or host key
// failure ends the wait). A connection that cannot dial again (the
// Kubernetes API's, whose every call is a stream of its own) has nothing
// to dial: the node answers when an op goes through.
func reconnect(ctx context.Context, n *node.Node) error {
	var last error
	err := retry.Poll(ctx, rebootPoll, func(ctx context.Context) (bool, error) {
		var err error
		if n.Capabilities().Redial {
			err = n.Reconnect(ctx)
		} else {
			_, err = n.Facts(ctx)
		}
		switch {
		case err == nil:
			return true, nil
		case !node.ConnectionLost(err) && ctx.Err() == nil:
			return false, err
		}
		last = err
		return false, nil
	})
	if err != nil && last != nil && ctx.Err() != nil {
		return last // what kept the node from answering says more than the timeout
	}
	return err
}

// notRunning says which services are not Running, for the timeout's
// message.
func notRunning(services []BootedService, lastErr error) string {
	var out []string
	for _, s := range services {
		if !s.Exists || s.Status == "Running" {
			continue
		}
		d := fmt.Sprintf("%s (%s", s.Service, s.Status)
		if s.StartType != "" && s.StartType != "Automatic" {
			d += ", start type " + s.StartType + ": Windows does not start it at boot"
		}
		out = append(out, d+")")
	}
	msg := "the services to run: " + strings.Join(out, ", ")
	if lastErr != nil {
		msg += fmt.Sprintf(" (last read: %v)", lastErr)
	}
	return msg
}

func ms(n int64) string {
	return (time.Duration(n) * time.Millisecond).Round(10 * time.Millisecond).String()
}
