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

// How the swap stops services: with the agent's stopper (stop.go), its
// hooks journalling each stop and switching off failure actions first.

// swapPollInterval is how often a wait for a service or a process looks.
const swapPollInterval = 50 * time.Millisecond

// swapStaysStopped is how long a service whose process was killed must
// stay Stopped before its binary is touched.
const swapStaysStopped = 500 * time.Millisecond

// stop stops a service with the stopper (stop.go), stopping its running
// dependents first (recorded in alsoStopped when StopOrder did not name
// them) and killing its process when it ignores its stop control for the
// stop timeout. Its failure actions are off from before the stop control
// (a process that exits while stopping counts as a failure, and a
// restart then could start the service, or the one it depends on, on the
// old binary). A service that is already Stopped is left alone and not
// counted as stopped by the swap.
func (s *swapRun) stop(ctx context.Context, name string) error {
	rec := s.service(name)
	if rec.stopping {
		return nil
	}
	rec.stopping = true
	defer func() { rec.stopping = false }()
	return s.stopper().stop(ctx, name)
}

// stopper is the swap's stopper: the stop timeout for every wait, and
// hooks that journal each stop and switch off failure actions first.
func (s *swapRun) stopper() *stopper {
	return &stopper{
		w: s.w, limit: s.stopTimeout, exit: s.stopTimeout, interval: swapPollInterval, staysStopped: swapStaysStopped,
		prepare: func(ctx context.Context, name string, pending bool) error {
			if pending {
				if err := s.recoveryOff(name); err != nil {
					return fmt.Errorf("switch off the failure actions of service %s while it stops: %w", name, err)
				}
				return s.markStopped(name)
			}
			if err := s.stopDependents(ctx, name); err != nil {
				return err
			}
			if err := s.recoveryOff(name); err != nil {
				return fmt.Errorf("switch off the failure actions of service %s before stopping it: %w", name, err)
			}
			// Its downtime starts now, after its dependents'.
			return s.markStopped(name)
		},
		dependents: s.stopDependents,
		beforeKill: func(name, why string) error {
			// The service control manager counts a killed process as a
			// failure and runs the service's failure actions (wins
			// restarts itself after 5 s): they are switched off first,
			// and put back after the swap.
			if err := s.recoveryOff(name); err != nil {
				return fmt.Errorf("service %s %s; switch off its failure actions before killing its process: %w", name, why, err)
			}
			return nil
		},
		killed: func(name string) {
			if rec := s.service(name); !rec.killed {
				rec.killed = true
				s.killed = append(s.killed, name)
			}
		},
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
		if rec := s.service(d); !rec.alsoStopped && !swapContains(s.req.StopOrder, d) {
			rec.alsoStopped = true
			s.alsoStopped = append(s.alsoStopped, d)
		}
		if err := s.stop(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// recoveryOff switches off a service's failure actions, once per swap,
// and remembers them for restoreRecovery. A service without actions, or
// one that does not exist, is left alone.
func (s *swapRun) recoveryOff(name string) error {
	svc := s.service(name)
	if svc.recoveryOff {
		return nil
	}
	rec, err := s.w.Recovery(name)
	if errors.Is(err, winos.ErrServiceDoesNotExist) {
		return nil
	}
	if errors.Is(err, winos.ErrInvalidLevel) {
		// The system cannot report failure actions (Wine cannot): none
		// are switched off, and the result says so.
		if !svc.recoveryUnknown {
			svc.recoveryUnknown = true
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
	s.keepRecovery(name, rec)
	return nil
}

// keepRecovery remembers a service's failure actions as they were before
// the op switched them off, to put back.
func (s *swapRun) keepRecovery(name string, rec winos.Recovery) {
	s.service(name).recoveryOff = true
	s.recovery = append(s.recovery, swapRecovery{service: name, recovery: rec})
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
	rec := s.service(name)
	if rec.stopped {
		return nil
	}
	if s.journal != nil && !swapContains(s.journal.Stopped, name) {
		s.journal.Stopped = append(s.journal.Stopped, name)
		if err := s.save(); err != nil {
			return err
		}
	}
	s.markedStopped(name, time.Since(s.started))
	return nil
}

// markedStopped records that the op stopped name at stoppedAt.
func (s *swapRun) markedStopped(name string, stoppedAt time.Duration) {
	rec := s.service(name)
	rec.stopped, rec.stoppedAt = true, stoppedAt
	s.stopped = append(s.stopped, name)
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

// swapContains reports whether list holds name (service names are
// case-insensitive).
func swapContains(list []string, name string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.EqualFold(s, name) })
}
