package machine

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// Delays are the simulated durations of service control.
type Delays struct {
	// ServiceStart is how long a service stays StartPending.
	ServiceStart time.Duration
	// ServiceStop is how long a service stays StopPending.
	ServiceStop time.Duration
	// CrashAfter is how long a SIMNODE-CRASH-ON-START service stays
	// Running before it exits.
	CrashAfter time.Duration
	// ShutdownGrace is how long after shutdown.exe /r the machine goes
	// down at the earliest; Boot is how long it is then unreachable.
	ShutdownGrace, Boot time.Duration
}

// DefaultDelays are close to a small real service's.
func DefaultDelays() Delays {
	return Delays{ServiceStart: 200 * time.Millisecond, ServiceStop: 200 * time.Millisecond, CrashAfter: 500 * time.Millisecond,
		ShutdownGrace: time.Second, Boot: time.Second}
}

// Machine is the simulated computer: state, files and faults, shared by
// every session. All state access goes through update or view, which hold
// mu, apply time-based transitions first, and save after a change.
type Machine struct {
	mu     sync.Mutex
	dir    string
	fsRoot string
	st     *State
	now    func() time.Time
	delays Delays
	log    *slog.Logger
	// vol is the C: drive (package ntfs), sharing mu.
	vol *ntfs.Volume
	// daemon plays the programs that run while their service process
	// lives (the kubelet); daemons runs them (daemon.go).
	daemon  Daemon
	daemons daemons

	// upAt is when a machine that is rebooting is up again (see
	// reboot.go); onReboot drops the SSH connections when it goes down.
	upAt     time.Time
	onReboot func()
	faultsMu sync.Mutex
	// saved is the state.json this machine last wrote (nil: none yet).
	saved []byte
}

// fsRoot is where the machine with state directory dir keeps its drives.
func fsRoot(dir string) string { return filepath.Join(dir, "fs") }

// DiscardFolder is where the machine with state directory dir keeps the
// files deleted on it until they are freed (ntfs.DiscardFolder): empty
// once the machine has no freeing left to do.
func DiscardFolder(dir string) string { return ntfs.DiscardFolder(fsRoot(dir)) }

func newMachine(dir, hostname string, bare bool, delays Delays, log *slog.Logger) (*Machine, error) {
	m := &Machine{dir: dir, fsRoot: fsRoot(dir), now: time.Now, delays: delays, log: log}
	st, err := loadState(stateFile(dir))
	if err != nil {
		return nil, err
	}
	if st == nil {
		st = newSeedState(hostname, bare, m.now())
		if err := m.seedFS(bare); err != nil {
			return nil, err
		}
		if err := saveState(stateFile(dir), st); err != nil {
			return nil, err
		}
	}
	m.st = st
	return m, nil
}

func (m *Machine) seedFS(bare bool) error {
	if err := os.MkdirAll(filepath.Join(m.fsRoot, "C"), 0o755); err != nil {
		return fmt.Errorf("create file system: %w", err)
	}
	for _, d := range seedDirs {
		w, _ := ntfs.ParsePath(d)
		if err := os.MkdirAll(m.hostPathNoResolve(w), 0o755); err != nil {
			return fmt.Errorf("seed %s: %w", d, err)
		}
	}
	for p, content := range seedFiles(bare) {
		w, _ := ntfs.ParsePath(p)
		host := m.hostPathNoResolve(w)
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			return fmt.Errorf("seed %s: %w", p, err)
		}
		if err := os.WriteFile(host, []byte(content), 0o644); err != nil {
			return fmt.Errorf("seed %s: %w", p, err)
		}
	}
	return nil
}

func (m *Machine) hostPathNoResolve(w ntfs.Path) string {
	return filepath.Join(append([]string{m.fsRoot, w.Drive()}, w.Elems()...)...)
}

// update runs fn on the state and saves it. fn's error is returned as is;
// the state is saved even then (fn may have changed it before failing).
func (m *Machine) update(fn func(s *State, now time.Time) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.advanceLocked(now)
	err := fn(m.st, now)
	m.saveLocked()
	return err
}

// view runs fn on the current state without changing it.
func (m *Machine) view(fn func(s *State, now time.Time)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.advanceLocked(now) {
		m.saveLocked()
	}
	fn(m.st, now)
}

// saveLocked writes the state when it differs from what the machine last
// wrote (many calls change nothing: a service queried, a file read).
func (m *Machine) saveLocked() {
	raw, err := encodeState(m.st)
	if err == nil && !bytes.Equal(raw, m.saved) {
		if err = writeState(stateFile(m.dir), raw); err == nil {
			m.saved = raw
		}
	}
	if err != nil {
		m.log.Error("save state", "err", err)
	}
}

// advanceLocked applies every transition that is due at now: pending
// states ending, crashes, services marked for deletion going away.
func (m *Machine) advanceLocked(now time.Time) bool {
	changed := false
	for {
		progressed := false
		for _, key := range sortedKeys(m.st.Services) {
			svc := m.st.Services[key]
			if m.stepLocked(svc, now) {
				progressed = true
			}
		}
		if !progressed {
			return changed
		}
		changed = true
	}
}

// stepLocked makes at most one transition of svc.
func (m *Machine) stepLocked(svc *Service, now time.Time) bool {
	s := m.st
	switch svc.Status {
	case StatusStartPending:
		if now.Before(svc.PendingUntil) {
			return false
		}
		for _, dep := range svc.Dependencies {
			d := s.Services[strings.ToLower(dep)]
			if d != nil && d.Status == StatusStartPending {
				// The SCM starts a service once its dependencies run:
				// it waits for one still starting.
				return false
			}
			if d == nil || d.Status != StatusRunning {
				reason := "The service has not been started."
				if d == nil {
					reason = "The specified service does not exist as an installed service."
				} else if d.LastExitCode != 0 {
					reason = fmt.Sprintf("The service terminated with exit code %d.", d.LastExitCode)
				}
				m.terminateLocked(svc, now, 1068, fmt.Sprintf("The %s service depends on the %s service which failed to start because of the following error: %s", svc.Name, dep, reason))
				return true
			}
		}
		svc.Status = StatusRunning
		svc.RunningSince = svc.PendingUntil
		svc.PendingUntil = time.Time{}
		svc.StartCount++
		m.checkRuntimeLocked(svc)
		return true
	case StatusRunning:
		if !svc.CrashAt.IsZero() && !now.Before(svc.CrashAt) {
			svc.CrashAt = time.Time{}
			m.crashLocked(svc, now)
			return true
		}
	case StatusStopPending:
		if svc.HangOnStop || now.Before(svc.PendingUntil) {
			return false
		}
		if svc.ExitOnStop {
			m.crashLocked(svc, now)
			return true
		}
		m.terminateLocked(svc, now, 0, "")
		return true
	case StatusStopped:
		if !svc.RestartAt.IsZero() && !now.Before(svc.RestartAt) && !svc.DeletePending {
			// The service control manager's recovery restart.
			svc.RestartAt = time.Time{}
			if _, err := m.startLocked(svc.Name, now, map[string]bool{}); err != nil {
				m.eventLocked(svc, now, fmt.Sprintf("The Service Control Manager failed to restart the %s service: %v", svc.Name, err))
			}
			return true
		}
		if svc.DeletePending {
			delete(s.Services, strings.ToLower(svc.Name))
			return true
		}
	}
	return false
}

// crashLocked ends svc's process as an unexpected exit: exit code 1, an
// event-log line, and the service's recovery action (a restart after its
// delay), as the service control manager does.
func (m *Machine) crashLocked(svc *Service, now time.Time) {
	if r := svc.Recovery; r != nil && r.ResetPeriod > 0 && len(svc.EventTimes) > 0 && now.Sub(svc.EventTimes[len(svc.EventTimes)-1]) > r.ResetPeriod {
		svc.Failures = 0
	}
	svc.Failures++
	event := fmt.Sprintf("The %s service terminated unexpectedly.  It has done this %d time(s).", svc.Name, svc.Failures)
	if r := svc.Recovery; r != nil && len(r.Actions) > 0 {
		a := r.Actions[min(svc.Failures, len(r.Actions))-1]
		if a.Type == "restart" {
			svc.RestartAt = now.Add(a.Delay)
			event += fmt.Sprintf("  The following corrective action will be taken in %d milliseconds: Restart the service.", a.Delay.Milliseconds())
		}
	}
	m.terminateLocked(svc, now, 1, event)
}

// terminateLocked ends svc's process and marks it Stopped.
func (m *Machine) terminateLocked(svc *Service, now time.Time, exitCode int, event string) {
	if svc.PID != 0 && !m.st.hostsOthers(svc) {
		m.endWrappedLocked(svc)
		if p := m.st.Processes[svc.PID]; p != nil {
			m.vol.ProcessEndedLocked(p.Image, now)
		}
		delete(m.st.Processes, svc.PID)
	}
	svc.PID = 0
	svc.Status = StatusStopped
	svc.PendingUntil = time.Time{}
	svc.CrashAt = time.Time{}
	svc.HangOnStop = false
	svc.ExitOnStop = false
	svc.NoPipe = false
	svc.LastExitCode = exitCode
	if event != "" {
		m.eventLocked(svc, now, event)
	}
}

// eventLocked writes a System event log line about svc.
func (m *Machine) eventLocked(svc *Service, now time.Time, event string) {
	svc.EventLog = append(svc.EventLog, event)
	svc.EventTimes = append(svc.EventTimes, now)
}

// lockedByLocked returns the process that holds the file w open, if any:
// the image of any running process is locked against writing and deletion.
func (m *Machine) lockedByLocked(w ntfs.Path) *Process {
	for _, p := range m.st.Processes {
		if strings.EqualFold(p.Image, string(w)) {
			return p
		}
	}
	return nil
}

func sortedKeys[V any](mp map[string]V) []string {
	keys := make([]string, 0, len(mp))
	for k := range mp {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
