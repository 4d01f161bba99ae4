package winos

import (
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"unsafe"

	"golang.org/x/sys/windows"
)

// FileVersion reads the version resource's FileVersion string, looked up
// the way .NET's FileVersionInfo (Get-Item's VersionInfo) does: see
// fileVersionKeys.
func (windowsOS) FileVersion(path string) (string, error) {
	const op = "read file version"
	size, err := windows.GetFileVersionInfoSize(path, nil)
	if err != nil {
		err = winErr(op, path, err)
		if noVersionResource(Code(err)) {
			return "", nil
		}
		return "", err
	}
	block := make([]byte, size)
	if err := windows.GetFileVersionInfo(path, 0, size, unsafe.Pointer(&block[0])); err != nil {
		return "", winErr(op, path, err)
	}
	var p unsafe.Pointer
	var n uint32
	var translation []byte
	if windows.VerQueryValue(unsafe.Pointer(&block[0]), `\VarFileInfo\Translation`, unsafe.Pointer(&p), &n) == nil && p != nil {
		translation = unsafe.Slice((*byte)(p), n)
	}
	for _, key := range fileVersionKeys(translation) {
		// For a string, n counts UTF-16 units, the terminator included.
		if windows.VerQueryValue(unsafe.Pointer(&block[0]), key, unsafe.Pointer(&p), &n) == nil && p != nil && n > 0 {
			return windows.UTF16ToString(unsafe.Slice((*uint16)(p), n)), nil
		}
	}
	return "", nil
}

// ACL reads the file's DACL with GetNamedSecurityInfo; see aclOf.
func (windowsOS) ACL(path string) (ACL, error) {
	sd, err := windows.GetNamedSecurityInfo(longPath(path), windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return ACL{}, winErr("read ACL", path, err)
	}
	acl, err := aclOf(sd)
	return acl, winErr("read ACL", path, err)
}

// aclOf walks a security descriptor's DACL with GetAce. Like Get-Acl's
// GetAccessRules(true, true), which the old scripts used, the entries
// include inherited ones. A missing security descriptor or a NULL DACL
// (no access control at all) is reported as the one entry it amounts to:
// Everyone, full control.
func aclOf(sd *windows.SECURITY_DESCRIPTOR) (ACL, error) {
	everyone := []ACE{{SID: SIDEveryone, Mask: FileAllAccess}}
	if sd == nil {
		return ACL{Entries: everyone}, nil
	}
	defer runtime.KeepAlive(sd) // dacl points into sd
	control, _, err := sd.Control()
	if err != nil {
		return ACL{}, err
	}
	out := ACL{Protected: control&windows.SE_DACL_PROTECTED != 0}
	dacl, _, err := sd.DACL()
	if err == windows.ERROR_OBJECT_NOT_FOUND || (err == nil && dacl == nil) {
		out.Entries = everyone
		return out, nil
	}
	if err != nil {
		return ACL{}, err
	}
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return ACL{}, err
		}
		// Allowed and denied entries share ACCESS_ALLOWED_ACE's layout;
		// any other kind (object, callback) has another, and is refused
		// rather than skipped, so that no entry granting access goes
		// unreported.
		var deny bool
		switch ace.Header.AceType {
		case windows.ACCESS_ALLOWED_ACE_TYPE:
		case windows.ACCESS_DENIED_ACE_TYPE:
			deny = true
		default:
			return ACL{}, &Error{Op: "read ACL entry", Target: strconv.FormatUint(uint64(i), 10), Code: Errno(windows.ERROR_UNSUPPORTED_TYPE),
				Message: fmt.Sprintf("access control entries of type %d are not supported", ace.Header.AceType)}
		}
		sid := (*windows.SID)(unsafe.Pointer(&ace.SidStart))
		inherit := ace.Header.AceFlags&(windows.OBJECT_INHERIT_ACE|windows.CONTAINER_INHERIT_ACE|windows.INHERIT_ONLY_ACE) != 0
		out.Entries = append(out.Entries, ACE{SID: sid.String(), Deny: deny, Mask: uint32(ace.Mask), Inherit: inherit})
	}
	return out, nil
}

// SetACL applies the DACL built by daclOf with SetNamedSecurityInfo,
// protected (no inheritance from the parent) or not as acl says.
func (windowsOS) SetACL(path string, acl ACL) error {
	const op = "set ACL"
	if len(acl.Entries) == 0 {
		// SetEntriesInAcl makes no ACL of an empty list, and an empty
		// DACL would deny every access, its owner's included.
		return invalid(op, path, "an ACL needs at least one entry")
	}
	dacl, err := daclOf(acl.Entries)
	if err != nil {
		return winErr(op, path, err)
	}
	info := windows.SECURITY_INFORMATION(windows.DACL_SECURITY_INFORMATION | windows.UNPROTECTED_DACL_SECURITY_INFORMATION)
	if acl.Protected {
		info = windows.DACL_SECURITY_INFORMATION | windows.PROTECTED_DACL_SECURITY_INFORMATION
	}
	return winErr(op, path, windows.SetNamedSecurityInfo(longPath(path), windows.SE_FILE_OBJECT, info, nil, nil, dacl, nil))
}

// daclOf builds a DACL of entries with SetEntriesInAcl. An entry applies
// to the object itself and, when Inherit is set, to everything below a
// directory.
// The entries go in canonical order (denials first), as Windows expects
// an ACL to be: Windows' SetEntriesInAcl sorts them so, Wine's keeps the
// order it is given.
func daclOf(entries []ACE) (*windows.ACL, error) {
	var pin runtime.Pinner
	defer pin.Unpin()
	entries = slices.Clone(entries)
	slices.SortStableFunc(entries, func(a, b ACE) int {
		switch {
		case a.Deny == b.Deny:
			return 0
		case a.Deny:
			return -1
		}
		return 1
	})
	explicit := make([]windows.EXPLICIT_ACCESS, len(entries))
	for i, e := range entries {
		sid, err := windows.StringToSid(e.SID)
		if err != nil {
			return nil, winErr("parse SID", e.SID, err)
		}
		pin.Pin(sid)
		mode := windows.ACCESS_MODE(windows.GRANT_ACCESS)
		if e.Deny {
			mode = windows.DENY_ACCESS
		}
		inheritance := uint32(windows.NO_INHERITANCE)
		if e.Inherit {
			inheritance = windows.SUB_CONTAINERS_AND_OBJECTS_INHERIT
		}
		explicit[i] = windows.EXPLICIT_ACCESS{
			AccessPermissions: windows.ACCESS_MASK(e.Mask),
			AccessMode:        mode,
			Inheritance:       inheritance,
			Trustee: windows.TRUSTEE{
				TrusteeForm:  windows.TRUSTEE_IS_SID,
				TrusteeType:  windows.TRUSTEE_IS_UNKNOWN,
				TrusteeValue: windows.TrusteeValueFromSID(sid),
			},
		}
	}
	return windows.ACLFromEntries(explicit, nil)
}

// Owner reads the owner SID with GetNamedSecurityInfo.
func (windowsOS) Owner(path string) (string, error) {
	sd, err := windows.GetNamedSecurityInfo(longPath(path), windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return "", winErr("read owner", path, err)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return "", winErr("read owner", path, err)
	}
	if owner == nil {
		return "", invalid("read owner", path, "the file has no owner")
	}
	return owner.String(), nil
}

// SetOwner sets the owner with SetNamedSecurityInfo, after enabling the
// take-ownership and restore privileges an elevated administrator holds
// (disabled by default), so that it may take a file another account owns
// and give it to a group it belongs to.
func (windowsOS) SetOwner(path, sid string) error {
	const op = "set owner"
	owner, err := windows.StringToSid(sid)
	if err != nil {
		return winErr("parse SID", sid, err)
	}
	for _, name := range []string{seTakeOwnershipName, seRestoreName} {
		if err := enablePrivilege(name); err != nil {
			return err
		}
	}
	return winErr(op, path, windows.SetNamedSecurityInfo(longPath(path), windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION, owner, nil, nil, nil))
}

// tokenOwner reads the token's default owner (TokenOwner): the owner of
// the objects the process creates.
func tokenOwner(token windows.Token) (string, error) {
	n := uint32(64)
	for {
		buf := make([]byte, n)
		err := windows.GetTokenInformation(token, windows.TokenOwner, &buf[0], n, &n)
		if err == windows.ERROR_INSUFFICIENT_BUFFER {
			continue
		}
		if err != nil {
			return "", err
		}
		// TOKEN_OWNER is one pointer to a SID (x/sys has no type for it).
		owner := (*struct{ Owner *windows.SID })(unsafe.Pointer(&buf[0])).Owner
		return owner.String(), nil
	}
}
