package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// How the agent stops a service so that its binary is free: the one way,
// used by the swap (and so undo, restart and the repair), by wins and by
// join-reset. Windows' own API is used as it is: a stop is refused while
// a dependent runs (error 1051), a starting service takes no stop control
// (error 1061), Stopped is reported before the process has exited (and
// the binary stays locked until it has), killing a process counts as a
// failure that runs the service's failure actions, and a service of type
// SERVICE_WIN32_SHARE_PROCESS shares its svchost with others, which is
// never killed.

// stopper stops services: stop sends the stop control and waits until
// the service is Stopped and its process (with a wrapper's children) has
// exited, killing them when the service ignores the control past limit.
// The hooks let the swap journal and guard each step; nil ones do
// nothing.
type stopper struct {
	w winos.OS
	// limit bounds each wait for the service: to take the stop control,
	// to report Stopped, and to be gone once its process was killed.
	limit time.Duration
	// exit bounds the wait for its processes to exit once it reports
	// Stopped.
	exit time.Duration
	// interval is how often a wait looks.
	interval time.Duration
	// staysStopped is how long a service whose process was killed must
	// stay Stopped (0: not watched).
	staysStopped time.Duration

	// prepare runs right before the stop control is sent, or with
	// pending when the service is already StopPending (no control is
	// sent then).
	prepare func(ctx context.Context, name string, pending bool) error
	// dependents stops the running services that depend on name. Without
	// it, a stop refused for a running dependent fails.
	dependents func(ctx context.Context, name string) error
	// beforeKill runs before the process of a service that did not stop
	// is killed; why says what the service did instead.
	beforeKill func(name, why string) error
	// killed records that the process of name was killed.
	killed func(name string)
}

// stopAttempts bounds how often a stop refused for a dependent that
// started meanwhile is tried again.
const stopAttempts = 3

// read reads a service; one that no longer exists reads as Stopped.
func (p *stopper) read(name string) (winos.Service, error) {
	svc, err := p.w.Service(name)
	if winsNotFound(err) {
		return winos.Service{Name: name, Status: winos.StatusStopped}, nil
	}
	return svc, err
}

// stop stops a service and waits until it is Stopped and its processes
// have exited, stopping its running dependents first (dependents) and
// killing its processes when the service ignores its stop control for
// limit or they outlive its stop by exit. A service that is already
// Stopped is left alone. A service that shares its process (svchost) is
// only waited for: that process runs on for the others.
func (p *stopper) stop(ctx context.Context, name string) error {
	svc, err := p.read(name)
	if err != nil || serviceDown(svc) {
		return err
	}
	exe := serviceExecutable(svc.CommandLine)
	if takesNoControl(svc.Status) {
		// A starting service takes no stop control (error 1061): it gets
		// the limit to finish starting first.
		_, err := poll(ctx, p.limit, p.interval, func() (bool, error) {
			svc, err = p.read(name)
			return err == nil && (!takesNoControl(svc.Status) || svc.ProcessExited), err
		})
		if err != nil {
			return err
		}
	}
	pid := svc.PID
	// A wrapper's children (nssm's program) must be gone too before the
	// binary is touched, and killed with it. Other services' children are
	// not theirs to end: containerd's shims keep containers running
	// across its restarts.
	wrapped := !svc.Shared && isWrapper(winpath.Base(exe))
	var tree []procRef
	if wrapped {
		if tree, err = p.serviceTree(pid); err != nil {
			return err
		}
	}
	switch {
	case serviceDown(svc):
		// It failed to start meanwhile.
		return nil
	case svc.Status == winos.StatusStopPending:
		if p.prepare != nil {
			if err := p.prepare(ctx, name, true); err != nil {
				return err
			}
		}
	default:
		if p.prepare != nil {
			if err := p.prepare(ctx, name, false); err != nil {
				return err
			}
		}
		if err := p.send(ctx, name); err != nil {
			return err
		}
	}
	stopped, err := poll(ctx, p.limit, p.interval, func() (bool, error) {
		svc, err = p.read(name)
		if err == nil && pid == 0 && svc.PID != 0 && !svc.Shared {
			pid = svc.PID
			if wrapped {
				tree, err = p.serviceTree(pid)
			}
		}
		return err == nil && serviceDown(svc), err
	})
	if err != nil {
		return err
	}
	if svc.Shared {
		if !stopped {
			return Fail(ops.KindTimeout, "service %s did not stop within %d ms; it shares its process %d with other services (svchost), "+
				"which was not killed: that would end them all", name, p.limit.Milliseconds(), pid)
		}
		return nil
	}
	if !stopped {
		return p.kill(ctx, name, pid, exe, tree, fmt.Sprintf("did not stop within %d ms", p.limit.Milliseconds()))
	}
	if pid == 0 {
		return nil
	}
	// Stopped is reported before the process has exited, and the binary
	// stays locked until it has.
	gone, err := poll(ctx, p.exit, p.interval, func() (bool, error) {
		runs, err := p.treeRuns(pid, exe, tree)
		return !runs, err
	})
	if err != nil || gone {
		return err
	}
	return p.kill(ctx, name, pid, exe, tree, fmt.Sprintf("stopped, but its process %d still ran %d ms later", pid, p.exit.Milliseconds()))
}

// takesNoControl reports whether a service in status st refuses
// controls until it leaves it.
func takesNoControl(st winos.ServiceStatus) bool {
	return st == winos.StatusStartPending || st == winos.StatusContinuePending || st == winos.StatusPausePending
}

// send sends name its stop control. A dependent that started since its
// dependents were stopped makes Windows refuse it (error 1051): that
// dependent is stopped too and the control sent again, a few times at
// most.
func (p *stopper) send(ctx context.Context, name string) error {
	for attempt := 1; ; attempt++ {
		err := p.w.StopService(name)
		switch winos.Code(err) {
		case 0, winos.ErrServiceNotActive, winos.ErrServiceCannotAcceptCtrl, winos.ErrInvalidServiceControl, winos.ErrServiceDoesNotExist:
			// Stopped already, gone, or not taking this control: the
			// wait for Stopped, and past it the kill, settle it.
			return nil
		case winos.ErrDependentServicesRunning:
			if p.dependents != nil && attempt < stopAttempts {
				if err := p.dependents(ctx, name); err != nil {
					return err
				}
				continue
			}
		}
		return err
	}
}

// kill ends the process of a service that will not stop, then every
// process of its tree (TerminateProcess ends one process: a killed nssm
// leaves its program running), and returns once the service is Stopped,
// its processes gone, and it stayed stopped for staysStopped. why says
// what the service did instead of stopping.
func (p *stopper) kill(ctx context.Context, name string, pid int, exe string, tree []procRef, why string) error {
	if pid == 0 {
		return Fail(ops.KindTimeout, "service %s %s and has no process to kill", name, why)
	}
	if p.beforeKill != nil {
		if err := p.beforeKill(name, why); err != nil {
			return err
		}
	}
	if err := p.w.KillProcess(pid, time.Time{}); err != nil && winos.Code(err) != winos.ErrInvalidParameter {
		return fmt.Errorf("service %s %s; kill its process %d: %w", name, why, pid, err)
	}
	if err := p.killTree(tree); err != nil {
		return fmt.Errorf("service %s %s; its process %d was killed, but: %w", name, why, pid, err)
	}
	if p.killed != nil {
		p.killed(name)
	}
	var status winos.ServiceStatus
	restarted := false
	down, err := poll(ctx, p.limit, p.interval, func() (bool, error) {
		svc, err := p.read(name)
		if err != nil {
			return false, err
		}
		status = svc.Status
		if svc.PID != 0 && svc.PID != pid {
			restarted = true
			return true, nil
		}
		if !serviceDown(svc) {
			return false, nil
		}
		runs, err := p.treeRuns(pid, exe, tree)
		return !runs, err
	})
	if err != nil {
		return err
	}
	if !down {
		return Fail(ops.KindTimeout, "service %s %s, and %d ms after its process %d was killed it is still %s or the process still runs", name, why, p.limit.Milliseconds(), pid, status)
	}
	if !restarted && p.staysStopped > 0 {
		// A restart now (a recovery restart scheduled before the stop,
		// another program) would run the binary about to be touched.
		restarted, err = poll(ctx, p.staysStopped, p.interval, func() (bool, error) {
			svc, err := p.read(name)
			if err != nil {
				return false, err
			}
			status = svc.Status
			return !serviceDown(svc), nil
		})
		if err != nil {
			return err
		}
	}
	if restarted {
		return Fail(ops.KindService, "service %s %s; after its process was killed it started again (%s) although its failure actions were off: something else restarts it; its binary was left untouched", name, why, status)
	}
	return nil
}

// processRuns reports whether process pid still runs exe. Windows reuses
// process IDs, so a process with the old PID that runs another program
// does not count. Images are compared by file name: a service's image
// path may be spelled differently from its process's (\??\, short names,
// environment variables).
func (p *stopper) processRuns(pid int, exe string) (bool, error) {
	procs, err := p.w.Processes()
	if err != nil {
		return false, fmt.Errorf("list processes: %w", err)
	}
	for _, pr := range procs {
		if pr.PID != pid {
			continue
		}
		name := procName(pr)
		return exe == "" || name == "" || strings.EqualFold(name, winpath.Base(exe)), nil
	}
	return false, nil
}
