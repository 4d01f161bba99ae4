package machine

import (
	"time"
)

// A reboot (shutdown.exe /r): the machine goes down once the /t delay
// (at least Delays.ShutdownGrace, the time Windows takes to end sshd)
// has passed, dropping every SSH connection; it stays unreachable for
// Delays.Boot; then sshd accepts connections again and the services
// whose start type is Automatic start (dependencies first, each taking
// Delays.ServiceStart), with new processes; one that fails is written to
// the event log unless its ErrorControl is Ignore. Every other process is gone,
// and the services of other start types are Stopped. Files, registry
// and the services' configuration persist; an install that waited for a
// reboot (.NET 4.8, see Node.Reboot; a Windows feature, features.go) is
// complete.

// ScheduleRestart makes the machine go down after delay (at least the
// shutdown grace) and come back after the boot time: shutdown.exe /r.
func (n *Node) ScheduleRestart(delay time.Duration) {
	n.m.scheduleReboot(delay)
}

func (m *Machine) scheduleReboot(delay time.Duration) {
	delay = max(delay, m.delays.ShutdownGrace)
	time.AfterFunc(delay, m.reboot)
}

// reboot takes the machine down and plans its boot.
func (m *Machine) reboot() {
	var drop func()
	_ = m.update(func(s *State, now time.Time) error {
		up := now.Add(m.delays.Boot)
		s.Processes = map[int]*Process{}
		finishNetFx(s)
		m.finishFeaturesLocked(s)
		for _, key := range sortedKeys(s.Services) {
			svc := s.Services[key]
			svc.PID, svc.Status, svc.PendingUntil, svc.CrashAt, svc.RestartAt = 0, StatusStopped, time.Time{}, time.Time{}, time.Time{}
			svc.HangOnStop, svc.NoPipe, svc.LastExitCode = false, false, 0
		}
		s.Boots = append(s.Boots, up)
		m.upAt = up
		for _, key := range sortedKeys(s.Services) {
			if svc := s.Services[key]; svc.StartType == StartAutomatic && !svc.DeletePending {
				logged := len(svc.EventLog)
				if _, err := m.startLocked(svc.Name, up, map[string]bool{}); err != nil {
					if svc.ErrorControl == "" || svc.ErrorControl == ErrorControlIgnore {
						// SERVICE_ERROR_IGNORE: the failure leaves no event.
						svc.EventLog, svc.EventTimes = svc.EventLog[:logged], svc.EventTimes[:logged]
						continue
					}
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

// Down reports whether the machine is rebooting (sshd does not answer).
func (m *Machine) Down() bool {
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
