package machine

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// A Daemon plays a program that runs for as long as its service process
// lives: the kubelet, for a binary that holds MarkerKubelet. The machine
// calls Start with its lock held when such a process starts (or, with
// Resume, when a machine opens on a state where it runs); the function
// Start returns runs in its own goroutine until its context ends (Close)
// and must stop when System says the process is gone.
type Daemon interface {
	Start(p DaemonStart) (run func(ctx context.Context), exit string)
}

// DaemonStart is what a Daemon learns of its process. Image and ReadFile
// may only be used while Start runs (they read without the machine's
// lock, which the caller holds); System only from run.
type DaemonStart struct {
	// Service and PID name the process; Args are the service's arguments.
	Service string
	PID     int
	Args    []string
	// Resume is set when the process was running before the machine
	// opened: the program already validated its configuration.
	Resume bool
	// Image opens the binary the process runs.
	Image func() (io.ReadCloser, error)
	// ReadFile reads a file of the machine.
	ReadFile func(p string) ([]byte, error)
	// System is the machine as LocalSystem, the service's account.
	System *Node
	// Log is the machine's log.
	Log *slog.Logger
	// Stderr is where the process's output goes: the log file of the
	// kube-log-runner that runs it; nil for a service's own process,
	// which has no console (logfiles.go).
	Stderr io.Writer
}

// daemons runs the machine's daemon goroutines until Close.
type daemons struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (k *daemons) start(fn func(ctx context.Context)) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.ctx == nil {
		k.ctx, k.cancel = context.WithCancel(context.Background())
	}
	if k.ctx.Err() != nil {
		return
	}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		fn(k.ctx)
	}()
}

// stop ends every daemon and waits for them.
func (k *daemons) stop() {
	k.mu.Lock()
	if k.ctx == nil {
		k.ctx, k.cancel = context.WithCancel(context.Background())
	}
	k.cancel()
	k.mu.Unlock()
	k.wg.Wait()
}

// startDaemonLocked starts the daemon of svc's new process, whose binary
// is at host (or of the program kube-log-runner runs there, with its
// arguments), its output going to stderr; when the program exits at once,
// the service crashes after the crash delay, as a program that rejects
// its configuration does.
func (m *Machine) startDaemonLocked(svc *Service, host string, stderr io.Writer, resume bool) {
	if m.daemon == nil {
		return
	}
	args := svc.Args
	if isLogRunner(svc.BinaryPath) {
		_, program, programArgs := splitLogRunner(svc.Args)
		w, err := ntfs.ParsePath(program)
		if err != nil {
			return
		}
		if host, _, err = ntfs.Resolve(m.fsRoot, w); err != nil {
			return
		}
		args = programArgs
	}
	run, exit := m.daemon.Start(DaemonStart{Service: svc.Name, PID: svc.PID, Args: args, Resume: resume,
		Image:    func() (io.ReadCloser, error) { return os.Open(host) },
		ReadFile: m.readFileLocked,
		System:   m.Node(Account{Name: "SYSTEM", Admin: true}),
		Log:      m.log,
		Stderr:   stderr})
	if exit != "" {
		m.log.Info(fmt.Sprintf("kubelet (pid %d): command failed: %s", svc.PID, exit))
		svc.CrashAt = svc.PendingUntil.Add(m.delays.CrashAfter)
		return
	}
	if run != nil {
		m.daemons.start(run)
	}
}

// readFileLocked reads the file at p, with the machine's lock held.
func (m *Machine) readFileLocked(p string) ([]byte, error) {
	w, err := ntfs.ParsePath(p)
	if err != nil {
		return nil, err
	}
	host, _, err := ntfs.Resolve(m.fsRoot, w)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(host)
}

// resumeDaemonsLocked starts the daemon of every running service whose
// binary has MarkerKubelet (a simnode started on a saved state).
func (m *Machine) resumeDaemonsLocked() {
	for _, svc := range m.st.Services {
		if svc.PID == 0 || svc.Status == StatusStopped {
			continue
		}
		w, err := ntfs.ParsePath(svc.BinaryPath)
		if err != nil {
			continue
		}
		host, _, err := ntfs.Resolve(m.fsRoot, w)
		if err != nil {
			continue
		}
		found, err := m.vol.ScanMarkersLocked(host)
		if err != nil || !m.wrappedMarkersLocked(svc, found)[MarkerKubelet] {
			continue
		}
		if stderr, exit := m.serviceLogLocked(svc); exit == "" {
			m.startDaemonLocked(svc, host, stderr, true)
		}
	}
}

// ProcessRuns reports whether service's process pid still runs.
func (n *Node) ProcessRuns(service string, pid int) bool {
	ok := false
	n.m.view(func(s *State, _ time.Time) {
		svc := s.Services[strings.ToLower(service)]
		ok = svc != nil && svc.PID == pid && svc.Status != StatusStopped
	})
	return ok
}
