package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// winsOrphans lists the rancher-wins-* processes wins started on the host
// (as Win32_Process's Name LIKE 'rancher-wins-%', which ignores case).
// They keep their images locked until they exit.
func winsOrphans(w winos.OS) ([]ops.Process, error) {
	procs, err := w.Processes()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	out := []ops.Process{}
	for _, p := range procs {
		if strings.HasPrefix(strings.ToLower(p.Name), ops.WinsProcessPrefix) {
			out = append(out, ops.Process{PID: p.PID, Name: p.Name, Path: p.Path, CommandLine: p.CommandLine, Started: p.Started})
		}
	}
	return out, nil
}

// winsKill terminates procs and waits up to winsLimits.exit for them to
// be gone; it returns those still running. A process that exited on its
// own meanwhile is not an error.
func winsKill(ctx context.Context, w winos.OS, procs []ops.Process) ([]ops.Process, error) {
	for _, p := range procs {
		if err := w.KillProcess(p.PID, p.Started); err != nil && winos.Code(err) != winos.ErrInvalidParameter {
			return procs, fmt.Errorf("stop process %d (%s): %w", p.PID, p.Name, err)
		}
	}
	return winsWaitGone(ctx, w, procs)
}

// winsWaitGone waits up to winsLimits.exit until none of procs runs and
// returns those still running. A process is matched by PID and image
// name, so that a new process that reused a PID is not waited for.
func winsWaitGone(ctx context.Context, w winos.OS, procs []ops.Process) ([]ops.Process, error) {
	var left []ops.Process
	_, err := poll(ctx, winsLimits.exit, winsLimits.poll, func() (bool, error) {
		running, err := w.Processes()
		if err != nil {
			return false, fmt.Errorf("list processes: %w", err)
		}
		left = left[:0]
		for _, p := range procs {
			for _, r := range running {
				if r.PID == p.PID && (p.Name == "" || strings.EqualFold(r.Name, p.Name)) {
					left = append(left, p)
					break
				}
			}
		}
		return len(left) == 0, nil
	})
	return left, err
}

// winsHalt records what winsStopService changed, so that an op that fails
// later can put it back.
type winsHalt struct {
	// wasRunning is true when the service was not Stopped before.
	wasRunning bool
	// recovery holds the failure actions that were switched off; nil
	// when none were.
	recovery *winos.Recovery
}

// winsStopService stops the rancher-wins service for good, so that its
// binary can be removed or replaced: its failure actions are switched off
// first (wins registers itself to restart 5, 10 and 15 s after a failure,
// and killing its process is a failure), the service is stopped (its
// process killed when it ignores the stop), its process must be gone, and
// the service must stay stopped for winsLimits.settle. A missing service
// is already stopped. The returned winsHalt is never nil: call undo when
// the op fails and the service stays.
func winsStopService(ctx context.Context, w winos.OS) (*winsHalt, error) {
	h := &winsHalt{}
	svc, err := w.Service(ops.WinsService)
	if winsNotFound(err) {
		return h, nil
	}
	if err != nil {
		return h, fmt.Errorf("read service %s: %w", ops.WinsService, err)
	}
	h.wasRunning = svc.Status != winos.StatusStopped
	rec, err := w.Recovery(ops.WinsService)
	// A system that cannot report failure actions (ERROR_INVALID_LEVEL:
	// Wine) has none to switch off.
	if err != nil && !winsNotFound(err) && !errors.Is(err, winos.ErrInvalidLevel) {
		return h, fmt.Errorf("read the failure actions of service %s: %w", ops.WinsService, err)
	}
	if winsActs(rec) {
		off := winos.Recovery{Actions: []winos.RecoveryAction{{Type: winos.RecoveryNone}}, ResetPeriod: rec.ResetPeriod}
		err := w.SetRecovery(ops.WinsService, off)
		switch {
		case err == nil:
			h.recovery = &rec
		case winos.Code(err) == winos.ErrServiceMarkedForDelete || winsNotFound(err):
			// The service goes away once it stops; the service control
			// manager restarts no service marked for deletion.
		default:
			return h, fmt.Errorf("switch off the failure actions of service %s before stopping it: %w", ops.WinsService, err)
		}
	}
	const rounds = 3
	for round := 1; ; round++ {
		if err := winsStopper(w).stop(ctx, ops.WinsService); err != nil {
			return h, err
		}
		stayed, err := winsStaysStopped(ctx, w)
		if err != nil || stayed {
			return h, err
		}
		if round == rounds {
			return h, Fail(ops.KindService, "service %s started again each of the %d times it was stopped: something other than its failure actions restarts it; stop that first", ops.WinsService, rounds)
		}
	}
}

// winsActs reports whether failure actions do anything (restart the
// service, run a command or reboot the computer).
func winsActs(r winos.Recovery) bool {
	for _, a := range r.Actions {
		if a.Type != winos.RecoveryNone {
			return true
		}
	}
	return false
}

// winsStopper stops the wins service: each wait bounded by winsLimits.
// Its failure actions are off already, so a kill restarts nothing.
func winsStopper(w winos.OS) *stopper {
	return &stopper{w: w, limit: winsLimits.stop, exit: winsLimits.exit, interval: winsLimits.poll}
}

// winsStaysStopped watches the stopped service for winsLimits.settle and
// reports whether it stayed stopped (or went away).
func winsStaysStopped(ctx context.Context, w winos.OS) (bool, error) {
	restarted := false
	_, err := poll(ctx, winsLimits.settle, winsLimits.poll, func() (bool, error) {
		svc, err := w.Service(ops.WinsService)
		if winsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, fmt.Errorf("read service %s: %w", ops.WinsService, err)
		}
		restarted = !serviceDown(svc)
		return restarted, nil
	})
	return !restarted, err
}

// undo puts back what winsStopService changed while the service is still
// registered: its failure actions and, when start is set and it was
// running, its running state (without waiting for it).
func (h *winsHalt) undo(w winos.OS, start bool) error {
	registered, err := winsRegistered(w)
	if err != nil || !registered {
		return err
	}
	var errs []error
	if h.recovery != nil {
		if err := w.SetRecovery(ops.WinsService, *h.recovery); err != nil {
			errs = append(errs, fmt.Errorf("restore the failure actions of service %s: %w", ops.WinsService, err))
		}
	}
	if start && h.wasRunning {
		if err := w.StartService(ops.WinsService); err != nil && winos.Code(err) != winos.ErrServiceAlreadyRunning {
			errs = append(errs, fmt.Errorf("start service %s again: %w", ops.WinsService, err))
		}
	}
	return errors.Join(errs...)
}

// winsOrphansStop stops the rancher-wins-* processes wins started on the
// host: they keep their binaries locked, so they must go before wins'
// files are replaced.
func winsOrphansStop(ctx context.Context, w winos.OS, _ ops.WinsOrphansStopRequest) (ops.WinsOrphansStopResponse, error) {
	orphans, err := winsOrphans(w)
	if err != nil {
		return ops.WinsOrphansStopResponse{}, err
	}
	left, err := winsKill(ctx, w, orphans)
	if err != nil {
		return ops.WinsOrphansStopResponse{}, err
	}
	if len(left) > 0 {
		return ops.WinsOrphansStopResponse{}, Fail(ops.KindTimeout, "process %d (%s) still runs %s after being stopped; its binary stays locked", left[0].PID, left[0].Name, winsLimits.exit)
	}
	return ops.WinsOrphansStopResponse{Stopped: orphans}, nil
}
