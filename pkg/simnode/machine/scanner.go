package machine

import (
	"strings"
	"time"
)

// A virus scanner. Defender, EDR products and indexers open a freshly
// written or just-run executable for a moment to scan it, without
// sharing delete access: until they close it, renaming or deleting the
// file fails with a sharing violation (error 32). With Options.ScannerHold
// (--scanner-hold) simnode plays one: every executable (a name with
// ".exe" in it: staged and backup copies too) is held when a write handle
// to it closes and when a process that ran it ends. A held file refuses
// the first rename or delete always (the scan is never faster than the
// caller) and any other until the hold has lasted ScannerHold: what a
// test sees does not depend on how fast the machine is.

// scan is one file the scanner holds.
type scan struct {
	until   time.Time
	refused bool
}

// scannedName reports whether the scanner looks at files named like w.
func scannedName(w winPath) bool { return strings.Contains(w.key(), ".exe") }

// scanLocked makes the scanner hold w from now on.
func (m *Machine) scanLocked(w winPath, now time.Time) {
	if m.scanHold <= 0 || !scannedName(w) {
		return
	}
	if m.scans == nil {
		m.scans = map[string]*scan{}
	}
	m.scans[w.key()] = &scan{until: now.Add(m.scanHold)}
}

// scanningLocked reports whether the scanner still holds w, and counts a
// refusal.
func (m *Machine) scanningLocked(w winPath, now time.Time) bool {
	s := m.scans[w.key()]
	if s == nil {
		return false
	}
	if s.refused && !now.Before(s.until) {
		delete(m.scans, w.key())
		return false
	}
	s.refused = true
	return true
}

// processEndedLocked is a process that ends: the scanner looks at its
// image.
func (m *Machine) processEndedLocked(p *Process, now time.Time) {
	if w, err := parseWinPath(p.Image); err == nil {
		m.scanLocked(w, now)
	}
}
