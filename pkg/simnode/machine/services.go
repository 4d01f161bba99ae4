package machine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// ServiceConfig is what registering a service (New-Service, sc.exe create,
// wins.exe srv app run --register) sets.
type ServiceConfig struct {
	Name         string
	DisplayName  string
	BinaryPath   string
	Args         []string
	StartType    StartType
	Dependencies []string
	// ErrorControl is what Windows does when the service fails to start
	// at boot: "Ignore" (CreateService's 0, the default here) leaves no
	// event; "Normal" logs the failure.
	ErrorControl string
}

// Service returns a copy of the named service.
func (n *Node) Service(name string) (Service, error) {
	var out Service
	var err error
	n.m.view(func(s *State, _ time.Time) {
		svc := s.Services[strings.ToLower(name)]
		if svc == nil {
			err = svcErr(name, CodeServiceDoesNotExist)
			return
		}
		out = copyService(svc)
	})
	return out, err
}

// Services returns copies of every service, sorted by name.
func (n *Node) Services() []Service {
	var out []Service
	n.m.view(func(s *State, _ time.Time) {
		for _, k := range sortedKeys(s.Services) {
			out = append(out, copyService(s.Services[k]))
		}
	})
	return out
}

// Dependents returns the names of the services that depend directly on
// name (Get-Service's DependentServices).
func (n *Node) Dependents(name string) []string {
	var out []string
	n.m.view(func(s *State, _ time.Time) { out = dependentsLocked(s, name) })
	return out
}

func dependentsLocked(s *State, name string) []string {
	var out []string
	for _, k := range sortedKeys(s.Services) {
		for _, d := range s.Services[k].Dependencies {
			if strings.EqualFold(d, name) {
				out = append(out, s.Services[k].Name)
			}
		}
	}
	return out
}

func copyService(svc *Service) Service {
	c := *svc
	c.Args = append([]string(nil), svc.Args...)
	c.Dependencies = append([]string(nil), svc.Dependencies...)
	c.EventLog = append([]string(nil), svc.EventLog...)
	c.EventTimes = append([]time.Time(nil), svc.EventTimes...)
	if svc.Recovery != nil {
		r := *svc.Recovery
		r.Actions = append([]RecoveryAction(nil), svc.Recovery.Actions...)
		c.Recovery = &r
	}
	return c
}

// StartService asks the service control manager to start name, as
// Start-Service does without waiting: stopped dependencies are started
// first, the service goes StartPending and becomes Running after
// Delays.ServiceStart (later than its dependencies). Starting a service
// that is Running or StartPending does nothing. It fails when the service
// is disabled or stopping, when its binary is missing or open for writing,
// or when a dependency cannot be started.
func (n *Node) StartService(name string) error {
	return n.m.update(func(s *State, now time.Time) error {
		_, err := n.m.startLocked(name, now, map[string]bool{})
		return err
	})
}

func (m *Machine) startLocked(name string, now time.Time, chain map[string]bool) (time.Time, error) {
	s := m.st
	svc := s.Services[strings.ToLower(name)]
	if svc == nil {
		return now, svcErr(name, CodeServiceDoesNotExist)
	}
	switch {
	case svc.DeletePending:
		return now, svcErr(svc.Name, CodeServiceMarkedForDelete)
	case svc.Status == StatusRunning:
		return now, nil
	case svc.Status == StatusStartPending:
		return svc.PendingUntil, nil
	case svc.Status == StatusStopPending:
		return now, svcErr(svc.Name, CodeServiceCannotAcceptCtrl)
	case svc.StartType == StartDisabled:
		return now, svcErr(svc.Name, CodeServiceDisabled)
	}
	if chain[strings.ToLower(svc.Name)] {
		return now, &ServiceError{Service: svc.Name, Code: CodeServiceDependencyFail, Message: "circular service dependency"}
	}
	chain[strings.ToLower(svc.Name)] = true
	ready := now
	for _, dep := range svc.Dependencies {
		at, err := m.startLocked(dep, now, chain)
		if err != nil {
			return now, &ServiceError{Service: svc.Name, Code: CodeServiceDependencyFail,
				Message: fmt.Sprintf("The dependency service or group failed to start: %v", err)}
		}
		if at.After(ready) {
			ready = at
		}
	}
	w, err := ntfs.ParsePath(svc.BinaryPath)
	if err != nil {
		return now, m.failStartLocked(svc, now, CodeFileNotFound)
	}
	host, canon, err := ntfs.Resolve(m.fsRoot, w)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(host); err == nil && fi.IsDir() {
			err = fmt.Errorf("is a directory")
		}
	}
	if err != nil {
		return now, m.failStartLocked(svc, now, CodeFileNotFound)
	}
	if m.vol.WritingLocked(canon) {
		return now, m.failStartLocked(svc, now, CodeSharingViolation)
	}
	found, err := m.vol.ScanMarkersLocked(host)
	if err != nil {
		return now, m.failStartLocked(svc, now, CodeFileNotFound)
	}
	found = m.wrappedMarkersLocked(svc, found)
	svc.Status = StatusStartPending
	svc.PendingUntil = ready.Add(m.delays.ServiceStart)
	svc.HangOnStop = found[MarkerHangOnStop]
	svc.ExitOnStop = found[MarkerExitOnStop]
	svc.NoPipe = found[MarkerWinsNoPipe]
	svc.CrashAt = time.Time{}
	// A program given an argument it rejects (a kubelet flag it does not
	// know) exits soon after it starts, as a crashing binary does.
	if found[MarkerCrashOnStart] || slices.Contains(svc.Args, MarkerCrashOnStart) {
		svc.CrashAt = svc.PendingUntil.Add(m.delays.CrashAfter)
	}
	s.spawn(svc, now)
	// The process runs the file under its canonical spelling.
	s.Processes[svc.PID].Image = string(canon)
	m.spawnWrappedLocked(svc, now)
	stderr, exit := m.serviceLogLocked(svc)
	if exit != "" {
		m.log.Info(fmt.Sprintf("%s (pid %d): %s", svc.Name, svc.PID, exit))
		svc.CrashAt = svc.PendingUntil.Add(m.delays.CrashAfter)
		return svc.PendingUntil, nil
	}
	containerdStarted(svc, stderr, now)
	if found[MarkerKubelet] {
		m.startDaemonLocked(svc, host, stderr, false)
	}
	return svc.PendingUntil, nil
}

func (m *Machine) failStartLocked(svc *Service, now time.Time, code int) error {
	err := svcErr(svc.Name, code)
	m.eventLocked(svc, now, fmt.Sprintf("The %s service failed to start due to the following error: %s",
		svc.Name, err.(*ServiceError).Message))
	return err
}

// StopService asks the service control manager to stop name, as
// Stop-Service does without waiting: the service goes StopPending and is
// Stopped after Delays.ServiceStop (never, with SIMNODE-HANG-ON-STOP,
// until its process is killed). Stopping a service that is Stopped or
// StopPending does nothing. Like the SCM (error 1051) it refuses while a
// dependent service is not Stopped: stop dependents first.
func (n *Node) StopService(name string) error {
	return n.m.update(func(s *State, now time.Time) error {
		svc := s.Services[strings.ToLower(name)]
		if svc == nil {
			return svcErr(name, CodeServiceDoesNotExist)
		}
		switch svc.Status {
		case StatusStopped, StatusStopPending:
			return nil
		case StatusStartPending:
			return svcErr(svc.Name, CodeServiceCannotAcceptCtrl)
		}
		var running []string
		for _, d := range dependentsLocked(s, svc.Name) {
			if s.Services[strings.ToLower(d)].Status != StatusStopped {
				running = append(running, d)
			}
		}
		if len(running) > 0 {
			return &ServiceError{Service: svc.Name, Code: CodeDependentServicesRunning,
				Message: fmt.Sprintf("A stop control has been sent to a service that other running services are dependent on (%s).", strings.Join(running, ", "))}
		}
		svc.Status = StatusStopPending
		svc.PendingUntil = now.Add(n.m.delays.ServiceStop)
		return nil
	})
}

// WaitService polls until the service has status want, or timeout passes
// (an *OpFailure of kind "timeout" naming the last status), or ctx ends.
func (n *Node) WaitService(ctx context.Context, name string, want ServiceStatus, timeout time.Duration) (Service, error) {
	deadline := time.Now().Add(timeout)
	for {
		svc, err := n.Service(name)
		if err != nil {
			return svc, err
		}
		if svc.Status == want {
			return svc, nil
		}
		if !time.Now().Before(deadline) {
			return svc, Fail(ops.KindTimeout, "service %s is still %s after %s (waiting for %s)", svc.Name, svc.Status, timeout, want)
		}
		if err := n.Sleep(ctx, 10*time.Millisecond); err != nil {
			return svc, err
		}
	}
}

// CreateService registers a new, Stopped service.
func (n *Node) CreateService(cfg ServiceConfig) error {
	if cfg.Name == "" || cfg.BinaryPath == "" {
		return svcErr(cfg.Name, CodeInvalidParameter)
	}
	if _, err := ntfs.ParsePath(cfg.BinaryPath); err != nil {
		return svcErr(cfg.Name, CodeInvalidParameter)
	}
	return n.m.update(func(s *State, _ time.Time) error {
		if old := s.Services[strings.ToLower(cfg.Name)]; old != nil {
			if old.DeletePending {
				return svcErr(cfg.Name, CodeServiceMarkedForDelete)
			}
			return svcErr(cfg.Name, CodeServiceExists)
		}
		svc := &Service{Status: StatusStopped}
		applyConfig(svc, cfg)
		s.Services[strings.ToLower(cfg.Name)] = svc
		return nil
	})
}

func applyConfig(svc *Service, cfg ServiceConfig) {
	svc.Name = cfg.Name
	svc.DisplayName = cfg.DisplayName
	if svc.DisplayName == "" {
		svc.DisplayName = cfg.Name
	}
	w, _ := ntfs.ParsePath(cfg.BinaryPath)
	svc.BinaryPath = string(w)
	svc.Args = append([]string(nil), cfg.Args...)
	svc.StartType = cfg.StartType
	if svc.StartType == "" {
		svc.StartType = StartManual
	}
	svc.Dependencies = append([]string(nil), cfg.Dependencies...)
	svc.ErrorControl = cfg.ErrorControl
	if svc.ErrorControl == "" {
		svc.ErrorControl = ErrorControlIgnore
	}
}

// ConfigureService changes a registered service's configuration (sc.exe
// config, Set-Service); changes apply from its next start.
func (n *Node) ConfigureService(name string, fn func(cfg *ServiceConfig)) error {
	return n.m.update(func(s *State, _ time.Time) error {
		svc := s.Services[strings.ToLower(name)]
		if svc == nil {
			return svcErr(name, CodeServiceDoesNotExist)
		}
		cfg := ServiceConfig{Name: svc.Name, DisplayName: svc.DisplayName, BinaryPath: svc.BinaryPath,
			Args: append([]string(nil), svc.Args...), StartType: svc.StartType, Dependencies: append([]string(nil), svc.Dependencies...),
			ErrorControl: svc.ErrorControl}
		fn(&cfg)
		if !strings.EqualFold(cfg.Name, svc.Name) {
			return svcErr(name, CodeInvalidParameter)
		}
		if _, err := ntfs.ParsePath(cfg.BinaryPath); err != nil {
			return svcErr(name, CodeInvalidParameter)
		}
		applyConfig(svc, cfg)
		return nil
	})
}

// DeleteService unregisters a service. A service that is not Stopped is
// marked for deletion and goes away once it stops, as with sc.exe delete.
func (n *Node) DeleteService(name string) error {
	return n.m.update(func(s *State, _ time.Time) error {
		svc := s.Services[strings.ToLower(name)]
		if svc == nil {
			return svcErr(name, CodeServiceDoesNotExist)
		}
		if svc.DeletePending {
			return svcErr(svc.Name, CodeServiceMarkedForDelete)
		}
		if svc.Status == StatusStopped {
			delete(s.Services, strings.ToLower(name))
			return nil
		}
		svc.DeletePending = true
		return nil
	})
}

// Processes returns every running process, sorted by PID.
func (n *Node) Processes() []Process {
	var out []Process
	n.m.view(func(s *State, _ time.Time) {
		for _, p := range s.Processes {
			out = append(out, *p)
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// StartProcess starts a stand-alone process running image (for example a
// rancher-wins-*.exe started through wins): it runs until killed and keeps
// its image locked. It fails when image does not exist.
func (n *Node) StartProcess(image, commandLine string) (int, error) {
	w, err := ntfs.ParsePath(image)
	if err != nil {
		return 0, err
	}
	var pid int
	err = n.m.update(func(s *State, now time.Time) error {
		host, canon, err := ntfs.Resolve(n.m.fsRoot, w)
		if err == nil {
			_, err = os.Stat(host)
		}
		if err != nil {
			return ntfs.FileErr("start process", w, CodeFileNotFound)
		}
		if n.m.vol.WritingLocked(canon) {
			return ntfs.FileErr("start process", canon, CodeSharingViolation)
		}
		pid = s.NextPID
		s.NextPID += 4
		if commandLine == "" {
			commandLine = `"` + string(canon) + `"`
		}
		s.Processes[pid] = &Process{PID: pid, Image: string(canon), CommandLine: commandLine, Started: now}
		return nil
	})
	return pid, err
}

// KillProcess ends a process (Stop-Process -Force). Killing a service's
// process counts as a crash: the service stops with exit code 1 and an
// event-log line, and its recovery action (a restart after a delay) runs.
// Like TerminateProcess it ends that one process: its children (a
// wrapper's program) run on.
func (n *Node) KillProcess(pid int) error {
	return n.m.update(func(s *State, now time.Time) error {
		p := s.Processes[pid]
		if p == nil {
			return Fail(ops.KindNotFound, "Cannot find a process with the process identifier %d.", pid)
		}
		n.m.vol.ProcessEndedLocked(p.Image, now)
		delete(s.Processes, pid)
		// Every service the process runs fails (a shared host runs
		// several); the crash leaves its children running.
		for _, svc := range s.servicesIn(pid) {
			svc.PID = 0
			n.m.crashLocked(svc, now)
		}
		return nil
	})
}

// systemPipes exist on every Windows Server.
var systemPipes = []string{"InitShutdown", "lsass", "ntsvcs", "scerpc", "epmapper", "LSM_API_service", "eventlog", "atsvc", "wkssvc", "srvsvc", "openssh-ssh-agent"}

// Pipes lists the named pipes that exist now (the names below \\.\pipe\):
// the system's own, plus those of each Running service that owns pipes
// (State.ServicePipes) unless its binary has SIMNODE-WINS-NO-PIPE, once
// its State.PipeDelays have passed since it reported Running.
func (n *Node) Pipes() []string {
	out := append([]string(nil), systemPipes...)
	n.m.view(func(s *State, now time.Time) {
		for _, k := range sortedKeys(s.Services) {
			if pipesUp(s, s.Services[k], now) {
				out = append(out, s.ServicePipes[k]...)
			}
		}
	})
	return out
}

// pipesUp reports whether svc's pipes exist at time at.
func pipesUp(s *State, svc *Service, at time.Time) bool {
	return svc.Status == StatusRunning && !svc.NoPipe && !at.Before(svc.RunningSince.Add(s.PipeDelays[strings.ToLower(svc.Name)]))
}

// PipeExists reports whether \\.\pipe\name exists (case-insensitive).
func (n *Node) PipeExists(name string) bool {
	name = strings.TrimPrefix(strings.ReplaceAll(name, "/", `\`), `\\.\pipe\`)
	for _, p := range n.Pipes() {
		if strings.EqualFold(p, name) {
			return true
		}
	}
	return false
}

// ListeningPorts lists the TCP ports listening now: sshd's 22, RDP's 3389
// while RDP is enabled, and those of each Running service
// (State.ServicePorts).
func (n *Node) ListeningPorts() []int {
	out := []int{22, 135, 445}
	n.m.view(func(s *State, _ time.Time) {
		if k := s.Registry[strings.ToLower(KeyTerminalServer)]; k != nil {
			if v := k.Values["fdenytsconnections"]; v != nil && v.Number == 0 {
				out = append(out, 3389)
			}
		}
		for _, k := range sortedKeys(s.Services) {
			if s.Services[k].Status == StatusRunning {
				out = append(out, s.ServicePorts[k]...)
			}
		}
	})
	sort.Ints(out)
	return out
}

// PortListening reports whether TCP port is listening.
func (n *Node) PortListening(port int) bool {
	for _, p := range n.ListeningPorts() {
		if p == port {
			return true
		}
	}
	return false
}

// SetServiceRecovery sets a service's failure actions
// (ChangeServiceConfig2); nil removes them.
func (n *Node) SetServiceRecovery(name string, rec *Recovery) error {
	return n.m.update(func(s *State, _ time.Time) error {
		svc := s.Services[strings.ToLower(name)]
		if svc == nil {
			return svcErr(name, CodeServiceDoesNotExist)
		}
		svc.Recovery = rec
		return nil
	})
}
