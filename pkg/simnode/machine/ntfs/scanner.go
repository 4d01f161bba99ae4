package ntfs

import (
	"strings"
	"time"
)

// A virus scanner. Defender, EDR products and indexers open a freshly
// written or just-run executable for a moment to scan it, without
// sharing delete access: until they close it, renaming or deleting the
// file fails with a sharing violation (error 32). With front.Options.ScannerHold
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
func scannedName(w Path) bool { return strings.Contains(w.Key(), ".exe") }

// scanLocked makes the scanner hold w from now on.
func (v *Volume) scanLocked(w Path, now time.Time) {
	if v.scanHold <= 0 || !scannedName(w) {
		return
	}
	if v.scans == nil {
		v.scans = map[string]*scan{}
	}
	v.scans[w.Key()] = &scan{until: now.Add(v.scanHold)}
}

// scanningLocked reports whether the scanner still holds w, and counts a
// refusal.
func (v *Volume) scanningLocked(w Path, now time.Time) bool {
	s := v.scans[w.Key()]
	if s == nil {
		return false
	}
	if s.refused && !now.Before(s.until) {
		delete(v.scans, w.Key())
		return false
	}
	s.refused = true
	return true
}

// ProcessEndedLocked is a process of image that ends: the scanner looks
// at its image.
func (v *Volume) ProcessEndedLocked(image string, now time.Time) {
	if w, err := ParsePath(image); err == nil {
		v.scanLocked(w, now)
	}
}
