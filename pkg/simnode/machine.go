package simnode

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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

// machine is the simulated computer: state, files and faults, shared by
// every session. All state access goes through update or view, which hold
// mu, apply time-based transitions first, and save after a change.
type machine struct {
	mu      sync.Mutex
	dir     string
	fsRoot  string
	st      *State
	now     func() time.Time
	delays  Delays
	log     *slog.Logger
	writers map[string]int // open write handles by winPath key
	markers markerCache
	// kubelets are the simulated kubelets of services whose binary has
	// MarkerKubelet.
	kubelets kubelets

	// hashMu guards hashes (trust.go's cache of agent digests) and
	// untrusted (the programs run that were not swdt-agent).
	hashMu    sync.Mutex
	hashes    map[string]agentHash
	untrusted []string
	// agentDigests is Options.AgentDigests.
	agentDigests func() []string

	// upAt is when a machine that is rebooting is up again (see
	// reboot.go); onReboot drops the SSH connections when it goes down.
	upAt     time.Time
	onReboot func()
	mutexes  mutexTable
	// scanHold and scans are the virus scanner's (scanner.go).
	scanHold time.Duration
	scans    map[string]*scan
	agents   agentTable

	faultsMu sync.Mutex
	// holdsReached counts the AgentHold faults agents reached.
	holdsReached atomic.Int64
}

func newMachine(dir, hostname string, bare bool, delays Delays, log *slog.Logger) (*machine, error) {
	m := &machine{dir: dir, fsRoot: filepath.Join(dir, "fs"), now: time.Now, delays: delays, log: log, writers: map[string]int{}, markers: markerCache{},
		hashes: map[string]agentHash{}}
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

func (m *machine) seedFS(bare bool) error {
	if err := os.MkdirAll(filepath.Join(m.fsRoot, "C"), 0o755); err != nil {
		return fmt.Errorf("create file system: %w", err)
	}
	for _, d := range seedDirs {
		w, _ := parseWinPath(d)
		if err := os.MkdirAll(m.hostPathNoResolve(w), 0o755); err != nil {
			return fmt.Errorf("seed %s: %w", d, err)
		}
	}
	for p, content := range seedFiles(bare) {
		w, _ := parseWinPath(p)
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

func (m *machine) hostPathNoResolve(w winPath) string {
	return filepath.Join(append([]string{m.fsRoot, w.drive()}, w.elems()...)...)
}

// update runs fn on the state and saves it. fn's error is returned as is;
// the state is saved even then (fn may have changed it before failing).
func (m *machine) update(fn func(s *State, now time.Time) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.advanceLocked(now)
	err := fn(m.st, now)
	m.saveLocked()
	return err
}

// view runs fn on the current state without changing it.
func (m *machine) view(fn func(s *State, now time.Time)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.advanceLocked(now) {
		m.saveLocked()
	}
	fn(m.st, now)
}

func (m *machine) saveLocked() {
	if err := saveState(stateFile(m.dir), m.st); err != nil {
		m.log.Error("save state", "err", err)
	}
}

// advanceLocked applies every transition that is due at now: pending
// states ending, crashes, services marked for deletion going away.
func (m *machine) advanceLocked(now time.Time) bool {
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
func (m *machine) stepLocked(svc *Service, now time.Time) bool {
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
		svc.PendingUntil = time.Time{}
		svc.StartCount++
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
func (m *machine) crashLocked(svc *Service, now time.Time) {
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
func (m *machine) terminateLocked(svc *Service, now time.Time, exitCode int, event string) {
	if svc.PID != 0 && !m.st.hostsOthers(svc) {
		m.endWrappedLocked(svc)
		if p := m.st.Processes[svc.PID]; p != nil {
			m.processEndedLocked(p, now)
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
func (m *machine) eventLocked(svc *Service, now time.Time, event string) {
	svc.EventLog = append(svc.EventLog, event)
	svc.EventTimes = append(svc.EventTimes, now)
}

// lockedByLocked returns the process that holds the file w open, if any:
// the image of any running process is locked against writing and deletion.
func (m *machine) lockedByLocked(w winPath) *Process {
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

// Faults are injected failures, kept in <StateDir>/faults.json and re-read
// on every connection, op and SFTP open, so a test or a user can change
// them while simnode runs.
type Faults struct {
	// OpLatencyMS delays ops by name; "*" applies to every op.
	OpLatencyMS map[string]int `json:"opLatencyMs,omitempty"`
	// CutAfterBytes closes the SSH connection once that many bytes of SFTP
	// write data arrived on it. It applies once and is then cleared.
	CutAfterBytes int64 `json:"cutAfterBytes,omitempty"`
	// FailOps names ops that fail once each with kind "injected".
	FailOps []string `json:"failOps,omitempty"`
	// ChocoDownloadFails makes the Chocolatey install script's download
	// fail, as on a node without internet access.
	ChocoDownloadFails bool `json:"chocoDownloadFails,omitempty"`
	// HeldOpen are files another process holds open without sharing
	// delete access (a virus scanner, an editor): as on NTFS they cannot
	// be renamed or removed (sharing violation) while the fault is set.
	HeldOpen []string `json:"heldOpen,omitempty"`
	// DamageEncoded damages the next encoded upload (a file ending in
	// .swdt-zst) the agent reads: "truncate" ends it halfway, "corrupt"
	// flips a byte in its middle. It applies once and is then cleared.
	DamageEncoded string `json:"damageEncoded,omitempty"`
	// HoldAgent stops the agent at one step of an op until its session
	// ends (see AgentHold): the point at which a test kills swdt.
	HoldAgent *AgentHold `json:"holdAgent,omitempty"`
	// MissingAPIs are Win32 calls the node lacks, as Wine and stripped-down
	// or hardened images do (see MissingAPI* in missing.go).
	MissingAPIs []string `json:"missingApis,omitempty"`
}

// heldOpen reports whether Faults.HeldOpen names w.
func (m *machine) heldOpen(w winPath) bool {
	for _, p := range m.faults().HeldOpen {
		if h, err := parseWinPath(p); err == nil && h.key() == w.key() {
			return true
		}
	}
	return false
}

func (m *machine) faultsFile() string { return filepath.Join(m.dir, "faults.json") }

// faults reads the current faults; a missing or broken file means none.
func (m *machine) faults() Faults {
	m.faultsMu.Lock()
	defer m.faultsMu.Unlock()
	return m.readFaultsLocked()
}

func (m *machine) readFaultsLocked() Faults {
	var f Faults
	raw, err := os.ReadFile(m.faultsFile())
	if err != nil {
		return f
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		m.log.Warn("ignoring unreadable faults file", "file", m.faultsFile(), "err", err)
	}
	return f
}

// updateFaults changes the faults file under a lock.
func (m *machine) updateFaults(fn func(f *Faults)) error {
	m.faultsMu.Lock()
	defer m.faultsMu.Unlock()
	f := m.readFaultsLocked()
	fn(&f)
	raw, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp := m.faultsFile() + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("write faults: %w", err)
	}
	return os.Rename(tmp, m.faultsFile())
}

// takeFailOp reports whether op should fail now, consuming the fault.
func (m *machine) takeFailOp(op string) bool {
	hit := false
	_ = m.updateFaults(func(f *Faults) {
		for i, name := range f.FailOps {
			if name == op {
				f.FailOps = append(f.FailOps[:i], f.FailOps[i+1:]...)
				hit = true
				return
			}
		}
	})
	return hit
}
