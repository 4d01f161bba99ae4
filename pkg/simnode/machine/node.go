package machine

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
	"sigs.k8s.io/swdt/internal/retry"
)

// Account is a user that may log in.
type Account struct {
	// Name is the user name (case-insensitive, as on Windows).
	Name string
	// Password, when set, allows password authentication.
	Password string
	// Admin says whether the account is a member of Administrators.
	Admin bool
	// Keys log in as this account only (besides Options.AuthorizedKeys,
	// which log in as any account).
	Keys []ssh.PublicKey
}

// Node is the machine as seen from one SSH session: what op handlers
// receive. Every method applies Windows' rules (NTFS locks, the service
// control manager's behaviour) and persists changes at once.
type Node struct {
	m       *Machine
	account Account
}

// Hostname is the computer name.
func (n *Node) Hostname() string {
	var h string
	n.m.view(func(s *State, _ time.Time) { h = s.Hostname })
	return h
}

// Username is the session's DOMAIN\user, as WindowsIdentity.Name prints it.
func (n *Node) Username() string {
	if strings.EqualFold(n.account.Name, "SYSTEM") {
		// LocalSystem is no account of the machine's: Windows names it
		// NT AUTHORITY\SYSTEM (a HostProcess container's default).
		return `NT AUTHORITY\SYSTEM`
	}
	return n.Hostname() + `\` + n.account.Name
}

// Account returns the session's account (without its password).
func (n *Node) Account() Account { a := n.account; a.Password = ""; return a }

// IsAdmin reports whether the session's account holds Administrator rights.
func (n *Node) IsAdmin() bool { return n.account.Admin }

// LanguageMode is PowerShell's language mode on the node.
func (n *Node) LanguageMode() string {
	mode := "FullLanguage"
	n.m.view(func(s *State, _ time.Time) {
		if s.LanguageMode != "" {
			mode = s.LanguageMode
		}
	})
	return mode
}

// Now is the simulated clock.
func (n *Node) Now() time.Time { return n.m.now() }

// Faults returns the faults currently injected.
func (n *Node) Faults() Faults { return n.m.Faults() }

// ChocoDownloadFails reports whether the Chocolatey install script's
// download fails (no internet on the node).
func (n *Node) ChocoDownloadFails() bool { return n.m.Faults().ChocoDownloadFails }

// Snapshot returns a deep copy of the current state, with all due
// transitions applied.
func (n *Node) Snapshot() *State {
	var c *State
	n.m.view(func(s *State, _ time.Time) { c = s.clone() })
	return c
}

// Update changes the state directly and saves it: the escape hatch for
// what no method covers (registry, firewall and Chocolatey edits are plain
// field changes). It must not touch Processes or service Status/PID; use
// the service methods for those so that locks and pipes stay consistent.
func (n *Node) Update(fn func(s *State) error) error {
	return n.m.update(func(s *State, _ time.Time) error { return fn(s) })
}

// Sleep waits for d or until ctx ends.
func (n *Node) Sleep(ctx context.Context, d time.Duration) error { return retry.Sleep(ctx, d) }

// UpdateFaults changes the injected faults (faults.json).
func (n *Node) UpdateFaults(fn func(f *Faults)) error { return n.m.UpdateFaults(fn) }

// Log is the machine's log.
func (n *Node) Log() *slog.Logger { return n.m.log }

// SetClock makes now the machine's clock, so that a test can look at a
// state (a service still StartPending) without racing it.
func (n *Node) SetClock(now func() time.Time) {
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	n.m.now = now
}
