package machine

import (
	"os"
	"strings"
	"time"
)

// This file models NTFS owners and discretionary access lists as far as
// the question "may this account do that here" needs them: every file and
// folder has an owner and a DACL made of its explicit entries and, unless
// inheritance is disabled, the entries its folders pass on; a fresh node
// has Windows Server's defaults for C:\, C:\ProgramData, C:\Program Files,
// C:\Windows and C:\Users. Only sessions of non-administrator accounts are
// checked: an elevated administrator holds Administrators' full control
// everywhere the defaults apply (simnode does not model a DACL that locks
// Administrators out; Windows would let them take ownership).

// Well-known accounts as Windows spells them.
const (
	AccountAdministrators = `BUILTIN\Administrators`
	AccountSystem         = `NT AUTHORITY\SYSTEM`
	AccountUsers          = `BUILTIN\Users`
	AccountAuthenticated  = `NT AUTHORITY\Authenticated Users`
	AccountEveryone       = `Everyone`
	AccountCreatorOwner   = `CREATOR OWNER`
)

// access is what an operation needs on a file or folder.
type access int

const (
	accRead        access = 1 << iota // read a file, list a folder
	accWrite                          // write or truncate a file's data
	accAddFile                        // create a file in a folder
	accAddFolder                      // create a subfolder
	accDelete                         // delete or rename the object itself
	accDeleteChild                    // delete anything in a folder
	accWriteDAC                       // change the DACL or the owner

	accAll = accRead | accWrite | accAddFile | accAddFolder | accDelete | accDeleteChild | accWriteDAC
)

// rightsAccess maps icacls' rights letters to what they allow: F full
// control, M modify, RX read and execute, R read, W write (create files
// and folders, write data), AD create folders (append data), WD create
// files (write data).
var rightsAccess = map[string]access{
	"F":  accAll,
	"M":  accRead | accWrite | accAddFile | accAddFolder | accDelete,
	"RX": accRead,
	"R":  accRead,
	"W":  accWrite | accAddFile | accAddFolder,
	"AD": accAddFolder,
	"WD": accAddFile,
}

// oici builds an entry that applies to the folder and is passed on to
// files (OI) and folders (CI) below it.
func oici(id, rights string) ACE {
	return ACE{Identity: id, Rights: rights, ObjectInherit: true, ContainerInherit: true}
}

// defaultACLs are Windows Server 2022's explicit DACLs of the folders a
// fresh node has, by lower-case path (simplified: TrustedInstaller's
// entries are left out, Administrators' and SYSTEM's modify-on-the-folder
// plus full-control-below is one full-control entry).
var defaultACLs = map[string]*ACL{
	`c:\`: {InheritanceDisabled: true, Entries: []ACE{
		oici(AccountAdministrators, "F"), oici(AccountSystem, "F"), oici(AccountUsers, "RX"),
		{Identity: AccountUsers, Rights: "AD", ContainerInherit: true},
		{Identity: AccountUsers, Rights: "WD", ContainerInherit: true, InheritOnly: true},
		{Identity: AccountCreatorOwner, Rights: "F", ObjectInherit: true, ContainerInherit: true, InheritOnly: true},
	}},
	`c:\programdata`: {InheritanceDisabled: true, Entries: []ACE{
		oici(AccountSystem, "F"), oici(AccountAdministrators, "F"),
		{Identity: AccountCreatorOwner, Rights: "F", ObjectInherit: true, ContainerInherit: true, InheritOnly: true},
		oici(AccountUsers, "RX"),
		{Identity: AccountUsers, Rights: "W", ContainerInherit: true},
	}},
	`c:\program files`: {InheritanceDisabled: true, Entries: []ACE{
		oici(AccountSystem, "F"), oici(AccountAdministrators, "F"), oici(AccountUsers, "RX"),
		{Identity: AccountCreatorOwner, Rights: "F", ObjectInherit: true, ContainerInherit: true, InheritOnly: true},
	}},
	`c:\windows`: {InheritanceDisabled: true, Entries: []ACE{
		oici(AccountSystem, "F"), oici(AccountAdministrators, "F"), oici(AccountUsers, "RX"),
		{Identity: AccountCreatorOwner, Rights: "F", ObjectInherit: true, ContainerInherit: true, InheritOnly: true},
	}},
	`c:\users`: {InheritanceDisabled: true, Entries: []ACE{
		oici(AccountSystem, "F"), oici(AccountAdministrators, "F"),
		{Identity: AccountUsers, Rights: "RX"}, {Identity: AccountEveryone, Rights: "RX"},
	}},
}

// profileACL is a user profile's DACL: the user, SYSTEM and
// Administrators only.
func profileACL(user string) *ACL {
	return &ACL{InheritanceDisabled: true, Entries: []ACE{
		oici(AccountSystem, "F"), oici(AccountAdministrators, "F"), oici(user, "F"),
	}}
}

// explicitLocked is w's explicit DACL: recorded, else the default of a
// fresh node, else nil (w only inherits).
func (s *State) explicitLocked(key string) *ACL {
	if a := s.ACLs[key]; a != nil {
		return a
	}
	return defaultACLs[key]
}

// ownerOf is w's owner: the account that created it when that was not an
// administrator, else Administrators.
func (s *State) ownerOf(w winPath) string {
	if o := s.Owners[w.key()]; o != "" {
		return o
	}
	return AccountAdministrators
}

// effectiveACL returns the entries that apply to w (a folder when isDir)
// itself: its explicit entries that are not inherit-only and, unless its
// inheritance is disabled, what its folders pass on, CREATOR OWNER
// standing for w's owner. Inherited entries are marked Inherited.
func (s *State) effectiveACL(w winPath, isDir bool) (entries []ACE, protected bool) {
	// passed is what the folder above the current component passes on.
	var passed []ACE
	chain := []winPath{winPath(w.drive() + `:\`)}
	for _, e := range w.elems() {
		chain = append(chain, chain[len(chain)-1].join(e))
	}
	for _, dir := range chain[:len(chain)-1] {
		var next []ACE
		exp := s.explicitLocked(dir.key())
		if exp != nil {
			for _, e := range exp.Entries {
				if e.ObjectInherit || e.ContainerInherit {
					next = append(next, e)
				}
			}
		}
		if exp == nil || !exp.InheritanceDisabled {
			next = append(next, passed...)
		}
		passed = next
	}
	exp := s.explicitLocked(w.key())
	if exp != nil {
		protected = exp.InheritanceDisabled
		for _, e := range exp.Entries {
			if !e.InheritOnly && !strings.EqualFold(e.Identity, AccountCreatorOwner) {
				entries = append(entries, e)
			}
		}
	}
	if protected {
		return entries, true
	}
	owner := s.ownerOf(w)
	for _, e := range passed {
		if isDir && !e.ContainerInherit || !isDir && !e.ObjectInherit {
			continue
		}
		e.Inherited, e.InheritOnly = true, false
		if !isDir {
			e.ObjectInherit, e.ContainerInherit = false, false
		}
		if strings.EqualFold(e.Identity, AccountCreatorOwner) {
			e.Identity = owner
		}
		entries = append(entries, e)
	}
	return entries, false
}

// memberOf reports whether a is, or belongs to, the account id.
func memberOf(a Account, id string) bool {
	l := strings.ToLower(id)
	switch l {
	case strings.ToLower(AccountUsers), strings.ToLower(AccountAuthenticated), strings.ToLower(AccountEveryone):
		return true
	case strings.ToLower(AccountAdministrators):
		return a.Admin
	}
	name := strings.ToLower(a.Name)
	return l == name || strings.HasSuffix(l, `\`+name)
}

// mayLocked reports whether a may do want to w (a folder when isDir).
// Administrators may do anything; an owner may always change the DACL.
func (s *State) mayLocked(a Account, w winPath, isDir bool, want access) bool {
	if a.Admin {
		return true
	}
	var have access
	if memberOf(a, s.ownerOf(w)) {
		have |= accWriteDAC
	}
	entries, _ := s.effectiveACL(w, isDir)
	for _, e := range entries {
		if memberOf(a, e.Identity) {
			have |= rightsAccess[strings.ToUpper(e.Rights)]
		}
	}
	return have&want == want
}

// hostIsDir reports whether the file behind host is a folder (false when
// it does not exist).
func hostIsDir(host string) (exists, isDir bool) {
	fi, err := os.Stat(host)
	if err != nil {
		return false, false
	}
	return true, fi.IsDir()
}

// checkLocked fails with access denied unless a may do want to w.
func (m *Machine) checkLocked(a Account, op string, w winPath, isDir bool, want access) error {
	if m.st.mayLocked(a, w, isDir, want) {
		return nil
	}
	return fileErr(op, w, CodeAccessDenied)
}

// checkDeleteLocked fails unless a may delete w: delete on w itself, or
// delete-child on its folder.
func (m *Machine) checkDeleteLocked(a Account, op string, w winPath, isDir bool) error {
	if m.st.mayLocked(a, w, isDir, accDelete) || m.st.mayLocked(a, w.dir(), true, accDeleteChild) {
		return nil
	}
	return fileErr(op, w, CodeAccessDenied)
}

// createdLocked records who created w: a non-administrator becomes its
// owner; an administrator's file belongs to Administrators.
func (m *Machine) createdLocked(a Account, w winPath) {
	if a.Admin {
		delete(m.st.Owners, w.key())
	} else {
		m.st.Owners[w.key()] = a.Name
	}
	m.saveLocked()
}

// movedLocked carries the owner and ACL records of from (and below it)
// to to, as NTFS keeps a file's security descriptor across a rename.
func (m *Machine) movedLocked(from, to winPath) {
	m.forgetHash(from.key())
	m.forgetHash(to.key())
	if from.key() == to.key() {
		return
	}
	m.forgetLocked(to)
	prefix := from.key() + `\`
	for k, v := range m.st.Owners {
		if k == from.key() || strings.HasPrefix(k, prefix) {
			delete(m.st.Owners, k)
			m.st.Owners[to.key()+k[len(from.key()):]] = v
		}
	}
	for k, v := range m.st.ACLs {
		if k == from.key() || strings.HasPrefix(k, prefix) {
			delete(m.st.ACLs, k)
			m.st.ACLs[to.key()+k[len(from.key()):]] = v
		}
	}
	m.saveLocked()
}

// forgetLocked drops the owner and ACL records of w and below it: the
// file is gone.
func (m *Machine) forgetLocked(w winPath) {
	m.forgetHash(w.key())
	prefix := w.key() + `\`
	for k := range m.st.Owners {
		if k == w.key() || strings.HasPrefix(k, prefix) {
			delete(m.st.Owners, k)
		}
	}
	for k := range m.st.ACLs {
		if k == w.key() || strings.HasPrefix(k, prefix) {
			delete(m.st.ACLs, k)
		}
	}
}

// Owner returns the owner of p as Windows spells the account.
func (n *Node) Owner(p string) (string, error) {
	var out string
	var err error
	n.m.view(func(s *State, _ time.Time) {
		var w winPath
		var host string
		w, host, err = n.m.locate(p)
		if err != nil {
			return
		}
		if _, serr := os.Stat(host); serr != nil {
			err = mapOSErr("read owner", w, host, serr)
			return
		}
		out = s.ownerOf(w)
	})
	return out, err
}

// SetOwner makes account the owner of p (an administrator's
// take-ownership; a non-administrator may only give a file it may change
// the DACL of to itself).
func (n *Node) SetOwner(p, account string) error {
	w, err := parseWinPath(p)
	if err != nil {
		return err
	}
	if !n.account.Admin && !memberOf(n.account, account) {
		return fileErr("set owner", w, CodeAccessDenied)
	}
	if err := n.m.writeSecurity(n.account, p); err != nil {
		return err
	}
	return n.m.update(func(s *State, _ time.Time) error {
		if strings.EqualFold(account, AccountAdministrators) {
			delete(s.Owners, w.key())
		} else {
			s.Owners[w.key()] = account
		}
		return nil
	})
}

// readSecurity runs fn on p's canonical path with the state locked, once
// a may read p's security descriptor (anyone who may read p).
func (m *Machine) readSecurity(a Account, p string, fn func(s *State, w winPath)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, host, err := m.locate(p)
	if err != nil {
		return err
	}
	exists, isDir := hostIsDir(host)
	if !exists {
		return fileErr("read security", w, CodeFileNotFound)
	}
	if err := m.checkLocked(a, "read security", w, isDir, accRead); err != nil {
		return err
	}
	fn(m.st, w)
	return nil
}

// writeSecurity fails unless a may change p's DACL and owner.
func (m *Machine) writeSecurity(a Account, p string) error {
	_, _, err := m.denied(p, func(w winPath, exists, isDir bool) error {
		if !exists {
			return fileErr("set security", w, CodeFileNotFound)
		}
		return m.checkLocked(a, "set security", w, isDir, accWriteDAC)
	})
	return err
}

// Security is p's security descriptor as GetNamedSecurityInfo reads it:
// its explicit ACL (nil when it only inherits) and its effective entries
// (explicit and inherited), once the node's account may read it.
func (n *Node) Security(p string) (explicit *ACL, effective []ACE, err error) {
	fi, err := n.m.stat(p)
	if err != nil {
		return nil, nil, err
	}
	err = n.m.readSecurity(n.account, p, func(s *State, w winPath) {
		if exp := s.explicitLocked(w.key()); exp != nil {
			c := *exp
			c.Entries = append([]ACE(nil), exp.Entries...)
			explicit = &c
		}
		effective, _ = s.effectiveACL(w, fi.IsDir)
	})
	return explicit, effective, err
}

// MayWriteSecurity fails unless the node's account may change p's DACL
// and owner (WRITE_DAC), as SetNamedSecurityInfo checks for anyone.
func (n *Node) MayWriteSecurity(p string) error { return n.m.writeSecurity(n.account, p) }
