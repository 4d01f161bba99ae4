package winos

import (
	"path/filepath"

	"golang.org/x/sys/windows"
)

// Privileges and long paths: what direct Win32 calls need that os and
// the service control manager's own tools arrange for themselves.

// seShutdownName is the privilege ChangeServiceConfig2 requires to set a
// reboot failure action (SC_ACTION_REBOOT).
const seShutdownName = "SeShutdownPrivilege"

// seTakeOwnershipName and seRestoreName let SetOwner take a file another
// account owns and give it to a group the agent belongs to.
const (
	seTakeOwnershipName = "SeTakeOwnershipPrivilege"
	seRestoreName       = "SeRestorePrivilege"
)

// enablePrivilege enables a privilege the agent's token holds disabled
// (an administrator's token holds SeShutdownPrivilege,
// SeTakeOwnershipPrivilege and SeRestorePrivilege, disabled). A
// token without it is left as it is: the call that needs it then fails
// with access denied.
func enablePrivilege(name string) error {
	var tok windows.Token
	if err := windows.OpenProcessToken(windows.CurrentProcess(), windows.TOKEN_ADJUST_PRIVILEGES|windows.TOKEN_QUERY, &tok); err != nil {
		return winErr("open process token", name, err)
	}
	defer tok.Close()
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return winErr("look up privilege", name, err)
	}
	var luid windows.LUID
	if err := windows.LookupPrivilegeValue(nil, p, &luid); err != nil {
		return winErr("look up privilege", name, err)
	}
	tp := windows.Tokenprivileges{PrivilegeCount: 1}
	tp.Privileges[0] = windows.LUIDAndAttributes{Luid: luid, Attributes: windows.SE_PRIVILEGE_ENABLED}
	return winErr("enable privilege", name, windows.AdjustTokenPrivileges(tok, false, &tp, 0, nil, nil))
}

// longPath is an absolute drive path in its \\?\ form, which direct Win32
// calls need for paths beyond MAX_PATH (260) unless LongPathsEnabled is
// set; os/... converts its own calls' paths the same way. Other paths
// (relative, UNC, already prefixed) are returned as they are.
func longPath(p string) string {
	if len(p) < 3 || p[1] != ':' || (p[2] != '\\' && p[2] != '/') {
		return p
	}
	// The \\?\ form is taken literally: no . or .. and no forward slashes.
	return `\\?\` + filepath.Clean(p)
}
