package ntfs

import (
	"os"
	"strings"
)

// This file models NTFS owners and discretionary access lists as far as
// the question "may this account do that here" needs them: every file and
// folder has an owner and a DACL made of its explicit entries and, unless
// inheritance is disabled, the entries its folders pass on; a fresh node
// has Windows Server's defaults for C:\, C:\ProgramData, C:\Program Files,
// C:\Windows and C:\Users, and NT SERVICE\TrustedInstaller owns
// C:\Windows, C:\Program Files and C:\Program Files (x86) with full control
// of them, as on every install. Only sessions of non-administrator accounts are
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
	// AccountTrustedInstaller is the Windows Modules Installer service's
	// account, which owns the system's folders.
	AccountTrustedInstaller = `NT SERVICE\TrustedInstaller`
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
// fresh node has, by lower-case path (simplified: Administrators' and
// SYSTEM's modify-on-the-folder plus full-control-below is one
// full-control entry; TrustedInstaller's full control of the folder
// itself is kept).
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
	`c:\program files`:       systemFolderACL(),
	`c:\program files (x86)`: systemFolderACL(),
	`c:\windows`:             systemFolderACL(),
	`c:\users`: {InheritanceDisabled: true, Entries: []ACE{
		oici(AccountSystem, "F"), oici(AccountAdministrators, "F"),
		{Identity: AccountUsers, Rights: "RX"}, {Identity: AccountEveryone, Rights: "RX"},
	}},
}

// systemFolderACL is the DACL of C:\Windows and the Program Files
// folders: TrustedInstaller's full control of the folder, SYSTEM's and
// Administrators' full control, Users' read and execute, CREATOR OWNER's
// full control of what is created below.
func systemFolderACL() *ACL {
	return &ACL{InheritanceDisabled: true, Entries: []ACE{
		{Identity: AccountTrustedInstaller, Rights: "F"},
		oici(AccountSystem, "F"), oici(AccountAdministrators, "F"), oici(AccountUsers, "RX"),
		{Identity: AccountCreatorOwner, Rights: "F", ObjectInherit: true, ContainerInherit: true, InheritOnly: true},
	}}
}

// defaultOwners are the owners of a fresh node's folders that
// Administrators do not own, by lower-case path.
var defaultOwners = map[string]string{
	`c:\windows`:             AccountTrustedInstaller,
	`c:\program files`:       AccountTrustedInstaller,
	`c:\program files (x86)`: AccountTrustedInstaller,
}

// ProfileACL is a user profile's DACL: the user, SYSTEM and
// Administrators only.
func ProfileACL(user string) *ACL {
	return &ACL{InheritanceDisabled: true, Entries: []ACE{
		oici(AccountSystem, "F"), oici(AccountAdministrators, "F"), oici(user, "F"),
	}}
}

// explicitLocked is w's explicit DACL: recorded, else the default of a
// fresh node, else nil (w only inherits).
func (s Security) explicit(key string) *ACL {
	if a := s.ACLs[key]; a != nil {
		return a
	}
	return defaultACLs[key]
}

// ownerOf is w's owner: the account recorded (one that created it when
// that was not an administrator, or one given it), else a fresh node's
// (TrustedInstaller for the system's folders), else Administrators.
func (s Security) ownerOf(w Path) string {
	if o := s.Owners[w.Key()]; o != "" {
		return o
	}
	if o := defaultOwners[w.Key()]; o != "" {
		return o
	}
	return AccountAdministrators
}

// setOwner records account as w's owner; Administrators is recorded only
// where a fresh node has another owner.
func (s Security) setOwner(w Path, account string) {
	if strings.EqualFold(account, AccountAdministrators) && defaultOwners[w.Key()] == "" {
		delete(s.Owners, w.Key())
		return
	}
	s.Owners[w.Key()] = account
}

// effectiveACL returns the entries that apply to w (a folder when isDir)
// itself: its explicit entries that are not inherit-only and, unless its
// inheritance is disabled, what its folders pass on, CREATOR OWNER
// standing for w's owner. Inherited entries are marked Inherited.
func (s Security) effectiveACL(w Path, isDir bool) (entries []ACE, protected bool) {
	// passed is what the folder above the current component passes on.
	var passed []ACE
	chain := []Path{Path(w.Drive() + `:\`)}
	for _, e := range w.Elems() {
		chain = append(chain, chain[len(chain)-1].Join(e))
	}
	for _, dir := range chain[:len(chain)-1] {
		var next []ACE
		exp := s.explicit(dir.Key())
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
	exp := s.explicit(w.Key())
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
func (s Security) may(a Account, w Path, isDir bool, want access) bool {
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
func (v *Volume) checkLocked(a Account, op string, w Path, isDir bool, want access) error {
	if v.host.Security().may(a, w, isDir, want) {
		return nil
	}
	return FileErr(op, w, CodeAccessDenied)
}

// checkDeleteLocked fails unless a may delete w: delete on w itself, or
// delete-child on its folder.
func (v *Volume) checkDeleteLocked(a Account, op string, w Path, isDir bool) error {
	if v.host.Security().may(a, w, isDir, accDelete) || v.host.Security().may(a, w.Dir(), true, accDeleteChild) {
		return nil
	}
	return FileErr(op, w, CodeAccessDenied)
}

// createdLocked records who created w: a non-administrator becomes its
// owner; an administrator's file belongs to Administrators.
func (v *Volume) createdLocked(a Account, w Path) {
	if a.Admin {
		v.host.Security().setOwner(w, AccountAdministrators)
	} else {
		v.host.Security().setOwner(w, a.Name)
	}
	v.host.Save()
}

// movedLocked carries the owner and ACL records of from (and below it)
// to to, as NTFS keeps a file's security descriptor across a rename.
func (v *Volume) movedLocked(from, to Path) {
	v.forgetHash(from.Key())
	v.forgetHash(to.Key())
	if from.Key() == to.Key() {
		return
	}
	v.forgetLocked(to)
	prefix := from.Key() + `\`
	sec := v.host.Security()
	for k, owner := range sec.Owners {
		if k == from.Key() || strings.HasPrefix(k, prefix) {
			delete(sec.Owners, k)
			sec.Owners[to.Key()+k[len(from.Key()):]] = owner
		}
	}
	for k, acl := range sec.ACLs {
		if k == from.Key() || strings.HasPrefix(k, prefix) {
			delete(sec.ACLs, k)
			sec.ACLs[to.Key()+k[len(from.Key()):]] = acl
		}
	}
	v.host.Save()
}

// forgetLocked drops the owner and ACL records of w and below it: the
// file is gone.
func (v *Volume) forgetLocked(w Path) {
	v.forgetHash(w.Key())
	prefix := w.Key() + `\`
	for k := range v.host.Security().Owners {
		if k == w.Key() || strings.HasPrefix(k, prefix) {
			delete(v.host.Security().Owners, k)
		}
	}
	for k := range v.host.Security().ACLs {
		if k == w.Key() || strings.HasPrefix(k, prefix) {
			delete(v.host.Security().ACLs, k)
		}
	}
}

// readSecurity runs fn on p's canonical path with the state locked, once
// a may read p's security descriptor (anyone who may read p).
func (v *Volume) readSecurity(a Account, p string, fn func(s Security, w Path)) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	w, host, err := v.Locate(p)
	if err != nil {
		return err
	}
	exists, isDir := hostIsDir(host)
	if !exists {
		return FileErr("read security", w, CodeFileNotFound)
	}
	if err := v.checkLocked(a, "read security", w, isDir, accRead); err != nil {
		return err
	}
	fn(v.host.Security(), w)
	return nil
}

// writeSecurity fails unless a may change p's DACL and owner.
func (v *Volume) WriteSecurity(a Account, p string) error {
	_, _, err := v.denied(p, func(w Path, exists, isDir bool) error {
		if !exists {
			return FileErr("set security", w, CodeFileNotFound)
		}
		return v.checkLocked(a, "set security", w, isDir, accWriteDAC)
	})
	return err
}

// ACL is a file's access control list as icacls would set it.
type ACL struct {
	// InheritanceDisabled is true after icacls /inheritance:r.
	InheritanceDisabled bool `json:"inheritanceDisabled"`
	// Entries are the explicit grants.
	Entries []ACE `json:"entries"`
}

// ACE grants Rights (icacls letters: F, M, RX, R, W, AD, WD) to Identity
// (e.g. "BUILTIN\Administrators", "NT AUTHORITY\SYSTEM", an account's
// name, or "CREATOR OWNER" in an entry that is passed on).
type ACE struct {
	Identity string `json:"identity"`
	Rights   string `json:"rights"`
	// ObjectInherit (OI) and ContainerInherit (CI) pass the entry on to
	// files and to folders below; InheritOnly (IO) entries do not apply
	// to the folder itself.
	ObjectInherit    bool `json:"oi,omitempty"`
	ContainerInherit bool `json:"ci,omitempty"`
	InheritOnly      bool `json:"io,omitempty"`
	// Inherited marks an entry that came from a folder above (only in
	// what the model computes, never recorded).
	Inherited bool `json:"inherited,omitempty"`
}

// OwnerLocked returns the owner of p as Windows spells the account.
func (v *Volume) OwnerLocked(p string) (string, error) {
	w, host, err := v.Locate(p)
	if err != nil {
		return "", err
	}
	if _, serr := os.Stat(host); serr != nil {
		return "", mapOSErr("read owner", w, host, serr)
	}
	return v.host.Security().ownerOf(w), nil
}

// SetOwner makes account the owner of p, as a (an administrator's
// take-ownership; a non-administrator may only give a file it may change
// the DACL of to itself).
func (v *Volume) SetOwner(a Account, p, account string) error {
	w, err := ParsePath(p)
	if err != nil {
		return err
	}
	if !a.Admin && !memberOf(a, account) {
		return FileErr("set owner", w, CodeAccessDenied)
	}
	if err := v.WriteSecurity(a, p); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.host.Advance()
	v.host.Security().setOwner(w, account)
	v.host.Save()
	return nil
}

// SecurityOf is p's security descriptor as GetNamedSecurityInfo reads it:
// its explicit ACL (nil when it only inherits) and its effective entries
// (explicit and inherited), once a may read it.
func (v *Volume) SecurityOf(a Account, p string) (explicit *ACL, effective []ACE, err error) {
	fi, err := v.Stat(p)
	if err != nil {
		return nil, nil, err
	}
	err = v.readSecurity(a, p, func(s Security, w Path) {
		if exp := s.explicit(w.Key()); exp != nil {
			c := *exp
			c.Entries = append([]ACE(nil), exp.Entries...)
			explicit = &c
		}
		effective, _ = s.effectiveACL(w, fi.IsDir)
	})
	return explicit, effective, err
}
