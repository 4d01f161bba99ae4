package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// How the swap stops services. Windows' own API is used as it is: a stop
// is refused while a dependent runs (error 1051), a starting service takes
// no stop control (error 1061), Stopped is reported before the process
// has exited, and killing a process counts as a failure that runs the
// service's failure actions.

// swapPollInterval is how often a wait for a service or a process looks.
const swapPollInterval = 50 * time.Millisecond

// swapStaysStopped is how long a service whose process was killed must
// stay Stopped before its binary is touched.
const swapStaysStopped = 500 * time.Millisecond

// swapStopAttempts bounds how often a stop refused for a dependent that
// started meanwhile is tried again.
const swapStopAttempts = 3

// stop stops a service and waits until it is Stopped and its process has
// exited, stopping its running dependents first (recorded in alsoStopped
// when StopOrder did not name them) and killing the process when the
// service ignores its stop control for the stop timeout. Its failure
// actions are off from before the stop control (a process that exits
// while stopping counts as a failure, and a restart then could start
// the service, or the one it depends on, on the old binary). A service
// that is already Stopped is left alone and not counted as stopped by the
// swap. A service that shares its process (svchost) is only waited for:
// that process runs on for the others, and is never killed.
func (s *swapRun) stop(ctx context.Context, name string) error {
	key := strings.ToLower(name)
	if s.stopping[key] {
		return nil
	}
	s.stopping[key] = true
	defer delete(s.stopping, key)

	svc, err := s.w.Service(name)
	if err != nil {
		return err
	}
	if serviceDown(svc) {
		return nil
	}
	exe := serviceExecutable(svc.CommandLine)
	if swapTakesNoControl(svc.Status) {
		// A starting service takes no stop control (error 1061): it gets
		// the stop timeout to finish starting first.
		_, err := poll(ctx, s.stopTimeout, swapPollInterval, func() (bool, error) {
			svc, err = s.w.Service(name)
			return err == nil && (!swapTakesNoControl(svc.Status) || svc.ProcessExited), err
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
	wrapped := !svc.Shared && isWrapper(swapBase(exe))
	var tree []procRef
	if wrapped {
		if tree, err = s.serviceTree(pid); err != nil {
			return err
		}
	}
	switch {
	case serviceDown(svc):
		// It failed to start meanwhile.
		return nil
	case svc.Status == winos.StatusStopPending:
		if err := s.recoveryOff(name); err != nil {
			return fmt.Errorf("switch off the failure actions of service %s while it stops: %w", name, err)
		}
		if err := s.markStopped(name); err != nil {
			return err
		}
	default:
		if err := s.stopDependents(ctx, name); err != nil {
			return err
		}
		if err := s.recoveryOff(name); err != nil {
			return fmt.Errorf("switch off the failure actions of service %s before stopping it: %w", name, err)
		}
		// Its downtime starts now, after its dependents'.
		if err := s.markStopped(name); err != nil {
			return err
		}
		if err := s.sendStop(ctx, name); err != nil {
			return err
		}
	}
	stopped, err := poll(ctx, s.stopTimeout, swapPollInterval, func() (bool, error) {
		svc, err = s.w.Service(name)
		if err == nil && pid == 0 && svc.PID != 0 && !svc.Shared {
			pid = svc.PID
			if wrapped {
				tree, err = s.serviceTree(pid)
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
				"which was not killed: that would end them all", name, s.req.StopTimeoutMs, pid)
		}
		return nil
	}
	if !stopped {
		return s.kill(ctx, name, pid, exe, tree, fmt.Sprintf("did not stop within %d ms", s.req.StopTimeoutMs))
	}
	if pid == 0 {
		return nil
	}
	// Stopped is reported before the process has exited, and the binary
	// stays locked until it has.
	gone, err := poll(ctx, s.stopTimeout, swapPollInterval, func() (bool, error) {
		runs, err := s.treeRuns(pid, exe, tree)
		return !runs, err
	})
	if err != nil || gone {
		return err
	}
	return s.kill(ctx, name, pid, exe, tree, fmt.Sprintf("stopped, but its process %d still ran %d ms later", pid, s.req.StopTimeoutMs))
}

// swapTakesNoControl reports whether a service in status st refuses
// controls until it leaves it.
func swapTakesNoControl(st winos.ServiceStatus) bool {
	return st == winos.StatusStartPending || st == winos.StatusContinuePending || st == winos.StatusPausePending
}

// sendStop sends name its stop control. A dependent that started since
// its dependents were stopped makes Windows refuse it (error 1051): that
// dependent is stopped too and the control sent again, a few times at
// most.
func (s *swapRun) sendStop(ctx context.Context, name string) error {
	for attempt := 1; ; attempt++ {
		err := s.w.StopService(name)
		switch winos.Code(err) {
		case 0, winos.ErrServiceNotActive, winos.ErrServiceCannotAcceptCtrl, winos.ErrInvalidServiceControl:
			// Stopped already, or not taking this control: the wait for
			// Stopped, and past it the kill, settle it.
			return nil
		case winos.ErrDependentServicesRunning:
			if attempt < swapStopAttempts {
				if err := s.stopDependents(ctx, name); err != nil {
					return err
				}
				continue
			}
		}
		return err
	}
}

// stopDependents stops every service that depends on name and is not
// Stopped, each with its own dependents first.
func (s *swapRun) stopDependents(ctx context.Context, name string) error {
	dependents, err := s.w.Dependents(name)
	if err != nil {
		return err
	}
	for _, d := range dependents {
		svc, err := s.w.Service(d)
		if errors.Is(err, winos.ErrServiceDoesNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if svc.Status == winos.StatusStopped {
			continue
		}
		if !swapContains(s.req.StopOrder, d) && !swapContains(s.alsoStopped, d) {
			s.alsoStopped = append(s.alsoStopped, d)
		}
		if err := s.stop(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// kill ends the process of a service that will not stop, then every
// process of its tree (TerminateProcess ends one process: a killed nssm
// leaves its program running), and returns once the service is Stopped,
// its processes gone, and it stayed stopped for swapStaysStopped. why
// says what the service did instead of stopping.
func (s *swapRun) kill(ctx context.Context, name string, pid int, exe string, tree []procRef, why string) error {
	if pid == 0 {
		return Fail(ops.KindTimeout, "service %s %s and has no process to kill", name, why)
	}
	// The service control manager counts a killed process as a failure
	// and runs the service's failure actions (wins restarts itself after
	// 5 s): they are switched off first, and put back after the swap.
	if err := s.recoveryOff(name); err != nil {
		return fmt.Errorf("service %s %s; switch off its failure actions before killing its process: %w", name, why, err)
	}
	if err := s.w.KillProcess(pid); err != nil && winos.Code(err) != winos.ErrInvalidParameter {
		return fmt.Errorf("service %s %s; kill its process %d: %w", name, why, pid, err)
	}
	if err := s.killTree(tree); err != nil {
		return fmt.Errorf("service %s %s; its process %d was killed, but: %w", name, why, pid, err)
	}
	if !swapContains(s.killed, name) {
		s.killed = append(s.killed, name)
	}
	var status winos.ServiceStatus
	restarted := false
	down, err := poll(ctx, s.stopTimeout, swapPollInterval, func() (bool, error) {
		svc, err := s.w.Service(name)
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
		runs, err := s.treeRuns(pid, exe, tree)
		return !runs, err
	})
	if err != nil {
		return err
	}
	if !down {
		return Fail(ops.KindTimeout, "service %s %s, and %d ms after its process %d was killed it is still %s or the process still runs", name, why, s.req.StopTimeoutMs, pid, status)
	}
	if !restarted {
		// A restart now (a recovery restart scheduled before the swap,
		// another program) would run the binary about to be renamed.
		restarted, err = poll(ctx, swapStaysStopped, swapPollInterval, func() (bool, error) {
			svc, err := s.w.Service(name)
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
func (s *swapRun) processRuns(pid int, exe string) (bool, error) {
	procs, err := s.w.Processes()
	if err != nil {
		return false, fmt.Errorf("list processes: %w", err)
	}
	for _, p := range procs {
		if p.PID != pid {
			continue
		}
		name := p.Name
		if name == "" {
			name = swapBase(p.Path)
		}
		return exe == "" || name == "" || strings.EqualFold(name, swapBase(exe)), nil
	}
	return false, nil
}

// recoveryOff switches off a service's failure actions, once per swap,
// and remembers them for restoreRecovery. A service without actions, or
// one that does not exist, is left alone.
func (s *swapRun) recoveryOff(name string) error {
	if slices.ContainsFunc(s.recovery, func(r swapRecovery) bool { return strings.EqualFold(r.service, name) }) {
		return nil
	}
	rec, err := s.w.Recovery(name)
	if errors.Is(err, winos.ErrServiceDoesNotExist) {
		return nil
	}
	if errors.Is(err, winos.ErrInvalidLevel) {
		// The system cannot report failure actions (Wine cannot): none
		// are switched off, and the result says so.
		if !slices.ContainsFunc(s.recoveryUnknown, func(n string) bool { return strings.EqualFold(n, name) }) {
			s.recoveryUnknown = append(s.recoveryUnknown, name)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(rec.Actions, func(a winos.RecoveryAction) bool { return a.Type != winos.RecoveryNone }) {
		return nil
	}
	// One explicit "take no action" rather than an empty list: to
	// ChangeServiceConfig2 an absent action array means "leave the
	// actions as they are".
	off := winos.Recovery{Actions: []winos.RecoveryAction{{Type: winos.RecoveryNone}}, ResetPeriod: rec.ResetPeriod}
	// The journal keeps them first: a swap killed from here on leaves
	// them for the repair to put back.
	if s.journal != nil {
		s.journal.Recovery = append(s.journal.Recovery, journalRecovery(name, rec))
		if err := s.save(); err != nil {
			return err
		}
	}
	if err := s.w.SetRecovery(name, off); err != nil {
		return err
	}
	s.recovery = append(s.recovery, swapRecovery{service: name, recovery: rec})
	return nil
}

// restoreRecovery puts back every service's failure actions that the swap
// switched off, reads each back, and lists those it could not restore.
func (s *swapRun) restoreRecovery() []ops.ServiceProblem {
	var problems []ops.ServiceProblem
	for _, r := range s.recovery {
		if err := s.w.SetRecovery(r.service, r.recovery); err != nil {
			problems = append(problems, ops.ServiceProblem{Service: r.service, Error: fmt.Sprintf("could not restore its failure actions: %v", err)})
			continue
		}
		got, err := s.w.Recovery(r.service)
		if err != nil {
			problems = append(problems, ops.ServiceProblem{Service: r.service, Error: fmt.Sprintf("its failure actions were restored but cannot be read back: %v", err)})
		} else if !sameRecovery(got, r.recovery) {
			problems = append(problems, ops.ServiceProblem{Service: r.service, Error: fmt.Sprintf("its failure actions read back as %v after they were restored to %v", got.Actions, r.recovery.Actions)})
		}
	}
	return problems
}

// sameRecovery reports whether two sets of failure actions are the same.
func sameRecovery(a, b winos.Recovery) bool {
	return a.ResetPeriod == b.ResetPeriod && slices.Equal(a.Actions, b.Actions)
}

// markStopped records that the swap stops name now, in the journal
// first: a swap killed after the stop control leaves the service to the
// repair to start again.
func (s *swapRun) markStopped(name string) error {
	key := strings.ToLower(name)
	if _, ok := s.stoppedAt[key]; ok {
		return nil
	}
	if s.journal != nil && !swapContains(s.journal.Stopped, name) {
		s.journal.Stopped = append(s.journal.Stopped, name)
		if err := s.save(); err != nil {
			return err
		}
	}
	s.stoppedAt[key] = time.Since(s.started)
	s.stopped = append(s.stopped, name)
	return nil
}

// serviceExecutable is the executable of a service's command line
// (ImagePath): the quoted part when it starts with a quote; else the
// shortest blank-separated prefix that ends in ".exe" (an unquoted path
// may hold blanks: C:\Program Files\x\x.exe --flag), looking no further
// than the first word that starts like an option (- or /); else the first
// word.
func serviceExecutable(commandLine string) string {
	cl := strings.TrimLeft(commandLine, " \t")
	if rest, ok := strings.CutPrefix(cl, `"`); ok {
		exe, _, _ := strings.Cut(rest, `"`)
		return exe
	}
	for i := 0; i <= len(cl); i++ {
		if i < len(cl) && cl[i] != ' ' && cl[i] != '\t' {
			continue
		}
		if strings.HasSuffix(strings.ToLower(cl[:i]), ".exe") {
			return cl[:i]
		}
		if next := strings.TrimLeft(cl[i:], " \t"); next == "" || next[0] == '-' || next[0] == '/' {
			break
		}
	}
	if i := strings.IndexAny(cl, " \t"); i >= 0 {
		return cl[:i]
	}
	return cl
}

// swapBase is the file name of a Windows path.
func swapBase(p string) string {
	return p[strings.LastIndexAny(p, `\/`)+1:]
}

// swapContains reports whether list holds name (service names are
// case-insensitive).
func swapContains(list []string, name string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.EqualFold(s, name) })
}
