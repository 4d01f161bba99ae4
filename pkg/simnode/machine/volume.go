package machine

import (
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// The file system's names, as the machine's API spells them.
type (
	// FileInfo describes a file or directory on the simulated drive.
	FileInfo = ntfs.FileInfo
	// OpenFlags say how a file is opened for writing.
	OpenFlags = ntfs.OpenFlags
	// WriteHandle is a file open for writing.
	WriteHandle = ntfs.WriteHandle
	// FileError is a file system error with Windows' wording.
	FileError = ntfs.FileError
	// ACL is a file's access control list as icacls would set it.
	ACL = ntfs.ACL
	// ACE is one entry of an ACL.
	ACE = ntfs.ACE
)

// Win32 error codes of the file system, well-known accounts and markers
// (see package ntfs).
const (
	CodeFileNotFound        = ntfs.CodeFileNotFound
	CodePathNotFound        = ntfs.CodePathNotFound
	CodeAccessDenied        = ntfs.CodeAccessDenied
	CodeSharingViolation    = ntfs.CodeSharingViolation
	CodeFileExists          = ntfs.CodeFileExists
	CodeInvalidParameter    = ntfs.CodeInvalidParameter
	CodeDirNotEmpty         = ntfs.CodeDirNotEmpty
	CodeAlreadyExists       = ntfs.CodeAlreadyExists
	AccountAdministrators   = ntfs.AccountAdministrators
	AccountSystem           = ntfs.AccountSystem
	AccountUsers            = ntfs.AccountUsers
	AccountAuthenticated    = ntfs.AccountAuthenticated
	AccountEveryone         = ntfs.AccountEveryone
	AccountCreatorOwner     = ntfs.AccountCreatorOwner
	AccountTrustedInstaller = ntfs.AccountTrustedInstaller
	MarkerCrashOnStart      = ntfs.MarkerCrashOnStart
	MarkerHangOnStop        = ntfs.MarkerHangOnStop
	MarkerExitOnStop        = ntfs.MarkerExitOnStop
	MarkerWinsNoPipe        = ntfs.MarkerWinsNoPipe
	MarkerWinsHang          = ntfs.MarkerWinsHang
	MarkerKubelet           = ntfs.MarkerKubelet
)

// Sentinels a FileError unwraps to, for errors.Is.
var (
	ErrNotExist         = ntfs.ErrNotExist
	ErrExist            = ntfs.ErrExist
	ErrSharingViolation = ntfs.ErrSharingViolation
	ErrNotEmpty         = ntfs.ErrNotEmpty
	ErrIsDir            = ntfs.ErrIsDir
)

// AdminOnlyACL reports whether acl is what sshd requires of
// administrators_authorized_keys: inheritance removed and access only for
// Administrators and SYSTEM.
func AdminOnlyACL(acl *ACL) bool { return ntfs.AdminOnlyACL(acl) }

// acct is the node's account as the file system checks it.
func (n *Node) acct() ntfs.Account { return ntfs.Account{Name: n.account.Name, Admin: n.account.Admin} }

// volumeHost is the machine as its volume sees it (ntfs.Host); every
// method runs with the machine's lock held.
type volumeHost struct{ m *Machine }

func (h volumeHost) Advance()       { h.m.advanceLocked(h.m.now()) }
func (h volumeHost) Now() time.Time { return h.m.now() }
func (h volumeHost) Save()          { h.m.saveLocked() }

func (h volumeHost) Security() ntfs.Security {
	return ntfs.Security{ACLs: h.m.st.ACLs, Owners: h.m.st.Owners}
}

func (h volumeHost) ImageLocked(w ntfs.Path) bool { return h.m.lockedByLocked(w) != nil }

func (h volumeHost) HeldOpen(w ntfs.Path) bool { return h.m.heldOpen(w) }

func (h volumeHost) SharedOpen() []string { return h.m.Faults().SharedOpen }

func (h volumeHost) LegacyDelete() bool { return h.m.legacyDeleteLocked() }

func (h volumeHost) ImageBelow(w ntfs.Path) bool {
	prefix := w.Key() + `\`
	for _, p := range h.m.st.Processes {
		k := strings.ToLower(p.Image)
		if k == w.Key() || strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func (h volumeHost) ImagesMoved(from, to ntfs.Path) {
	changed := false
	for _, p := range h.m.st.Processes {
		if strings.EqualFold(p.Image, string(from)) {
			p.Image = string(to)
			changed = true
		} else if strings.HasPrefix(strings.ToLower(p.Image), from.Key()+`\`) {
			p.Image = string(to) + p.Image[len(from):]
			changed = true
		}
	}
	if changed {
		h.m.saveLocked()
	}
}
