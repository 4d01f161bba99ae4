package machine

import (
	"fmt"
	"log/slog"
	"time"

	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// Config is what a machine is opened with: its state directory and what
// the simnode command's flags (or a test's options) set at start.
type Config struct {
	// Dir holds state.json, faults.json and fs/ (the simulated drives).
	Dir string
	// Hostname and Bare seed a new state (see front.Options).
	Hostname string
	Bare     bool
	// Delays of service control.
	Delays Delays
	// Log receives the machine's log lines; nil discards.
	Log *slog.Logger
	// AgentDigests lists further SHA-256 digests of swdt-agent builds
	// TrustedAgent accepts; asked at every check.
	AgentDigests func() []string
	// Faults, when not nil, replace faults.json.
	Faults *Faults
	// HyperV, when not nil, replaces the Hyper-V part of the state.
	HyperV *HyperVHost
	// LanguageMode, when set, replaces PowerShell's language mode.
	LanguageMode string
	// Release, when set, makes the machine that Windows Server release
	// (Server2019 or Server2022; release.go).
	Release string
	// Arch, when set, makes the machine one of that architecture
	// (arch.go).
	Arch string
	// FileSystem is C:'s file system: NTFS ("" too) or ReFS.
	FileSystem string
	// ScannerHold, when positive, plays a virus scanner (scanner.go).
	ScannerHold time.Duration
	// KubeletSetup, when set, makes the kubelet service run C:\k\kubelet.exe
	// that way (wrappers.go).
	KubeletSetup KubeletSetup
	// Accounts get their profile folders (non-administrators only).
	Accounts []Account
	// Daemon plays the programs that run while their service process
	// lives (the kubelet); nil runs none.
	Daemon Daemon
}

// Open loads (or seeds) the machine in cfg.Dir and applies cfg.
func Open(cfg Config) (*Machine, error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMachine(cfg.Dir, cfg.Hostname, cfg.Bare, cfg.Delays, log)
	if err != nil {
		return nil, err
	}
	m.vol = ntfs.New(&m.mu, volumeHost{m}, m.fsRoot, cfg.ScannerHold, cfg.AgentDigests)
	switch cfg.FileSystem {
	case "", NTFS:
	case ReFS:
		m.vol.SetBlockCloning(ReFSCluster)
	default:
		return nil, fmt.Errorf("file system %q: want %s or %s", cfg.FileSystem, NTFS, ReFS)
	}
	m.daemon = cfg.Daemon
	if cfg.Faults != nil {
		f := *cfg.Faults
		if err := m.UpdateFaults(func(cur *Faults) { *cur = f }); err != nil {
			return nil, err
		}
	}
	if cfg.HyperV != nil {
		hv := cfg.HyperV.clone()
		if err := m.update(func(s *State, _ time.Time) error { s.HyperV = hv; return nil }); err != nil {
			return nil, err
		}
	}
	if mode := cfg.LanguageMode; mode != "" {
		if err := m.update(func(s *State, _ time.Time) error { s.LanguageMode = mode; return nil }); err != nil {
			return nil, err
		}
	}
	if cfg.Release != "" {
		if err := m.setRelease(cfg.Release); err != nil {
			return nil, err
		}
	}
	if cfg.Arch != "" {
		if err := m.setArch(cfg.Arch); err != nil {
			return nil, err
		}
	}
	if cfg.KubeletSetup != "" {
		if err := m.setKubeletSetup(cfg.KubeletSetup); err != nil {
			return nil, err
		}
	}
	// A daemon whose service was running when the state was saved runs
	// again in this process.
	if err := m.update(func(s *State, _ time.Time) error { m.resumeDaemonsLocked(); return nil }); err != nil {
		return nil, err
	}
	if err := m.ensureProfiles(cfg.Accounts); err != nil {
		return nil, fmt.Errorf("create the accounts' profiles: %w", err)
	}
	return m, nil
}

// Node is the machine as account sees it.
func (m *Machine) Node(a Account) *Node { return &Node{m: m, account: a} }

// OnReboot sets what happens when the machine goes down (sshd drops its
// connections).
func (m *Machine) OnReboot(fn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onReboot = fn
}

// Close ends the daemons and waits for them, and for the volume to free
// what was deleted.
func (m *Machine) Close() {
	m.daemons.stop()
	m.vol.Close()
}

// TrustedAgent reports whether the file at p is a swdt-agent build simnode
// runs (see ntfs.Volume.TrustedAgent).
func (m *Machine) TrustedAgent(p string) bool { return m.vol.TrustedAgent(p) }

// RanUntrusted records that the program at p ran although it is not
// swdt-agent.
func (m *Machine) RanUntrusted(p string) { m.vol.RanUntrusted(p) }

// UntrustedRuns lists the programs RanUntrusted recorded, in order.
func (m *Machine) UntrustedRuns() []string { return m.vol.UntrustedRuns() }
