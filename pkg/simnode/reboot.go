package simnode

import (
	"context"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/winos"
)

// A reboot (shutdown.exe /r): the machine goes down once the /t delay
// (at least Delays.ShutdownGrace, the time Windows takes to end sshd)
// has passed, dropping every SSH connection; it stays unreachable for
// Delays.Boot; then sshd accepts connections again and the services
// whose start type is Automatic start (dependencies first, each taking
// Delays.ServiceStart), with new processes. Every other process is gone,
// and the services of other start types are Stopped. Files, registry
// and the services' configuration persist; an install that waited for a
// reboot (.NET 4.8, see Node.Reboot) is complete.

// runShutdown plays shutdown.exe: /r [/t N] restarts the machine; other
// uses are refused as the real one refuses a missing /r, /s or /a.
func runShutdown(_ context.Context, n *Node, _ string, args []string, _ []byte) (winos.Result, error) {
	restart, delay := false, 30*time.Second // Windows' default /t
	for i := 0; i < len(args); i++ {
		switch strings.ToLower(args[i]) {
		case "/r":
			restart = true
		case "/t":
			if i+1 < len(args) {
				s, err := strconv.Atoi(args[i+1])
				if err != nil || s < 0 || s > 315360000 {
					return winos.Result{ExitCode: 87, Stderr: []byte("The parameter is incorrect.(87)\r\n")}, nil
				}
				delay = time.Duration(s) * time.Second
				i++
			}
		}
	}
	if !restart {
		return winos.Result{ExitCode: 1, Stderr: []byte("simnode's shutdown.exe only restarts (/r)\r\n")}, nil
	}
	n.m.scheduleReboot(delay)
	return winos.Result{}, nil
}

// scheduleReboot makes the machine go down after delay (at least the
// shutdown grace) and come back after the boot time.
func (m *machine) scheduleReboot(delay time.Duration) {
	delay = max(delay, m.delays.ShutdownGrace)
	time.AfterFunc(delay, m.reboot)
}

// reboot takes the machine down and plans its boot.
func (m *machine) reboot() {
	var drop func()
	_ = m.update(func(s *State, now time.Time) error {
		up := now.Add(m.delays.Boot)
		s.Processes = map[int]*Process{}
		finishNetFx(s)
		for _, key := range sortedKeys(s.Services) {
			svc := s.Services[key]
			svc.PID, svc.Status, svc.PendingUntil, svc.CrashAt, svc.RestartAt = 0, StatusStopped, time.Time{}, time.Time{}, time.Time{}
			svc.HangOnStop, svc.NoPipe, svc.LastExitCode = false, false, 0
		}
		s.Boots = append(s.Boots, up)
		m.upAt = up
		for _, key := range sortedKeys(s.Services) {
			if svc := s.Services[key]; svc.StartType == StartAutomatic && !svc.DeletePending {
				if _, err := m.startLocked(svc.Name, up, map[string]bool{}); err != nil {
					m.eventLocked(svc, up, "The "+svc.Name+" service failed to start at boot: "+err.Error())
				}
			}
		}
		drop = m.onReboot
		return nil
	})
	m.log.Info("reboot", "up at", m.upAt)
	if drop != nil {
		drop()
	}
}

// down reports whether the machine is rebooting (sshd does not answer).
func (m *machine) down() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now().Before(m.upAt)
}

// Boots lists when the machine came up after each reboot simnode played.
func (n *Node) Boots() []time.Time {
	var out []time.Time
	n.m.view(func(s *State, _ time.Time) { out = append(out, s.Boots...) })
	return out
}

// dropConns closes every SSH connection, as a machine going down does.
func (s *Server) dropConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}
