package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The folders swdt puts programs in (a provisioner's destination folder,
// wins' folder) hold what services run as SYSTEM. Most lie below C:\,
// where Windows' defaults let any user create folders (and own them), and
// where a folder an administrator made inherits C:\'s grant to
// Authenticated Users to change what it holds. So, as for the join's
// folders (join_folders.go):
//
//   - such a folder, or one above it, that another account owns is refused
//     before anything changes (what it holds is unknown);
//   - a folder above it that lets others delete, rename or re-permission
//     what it holds is refused;
//   - the folder itself, when others may change what it holds, is given
//     to Administrators and SYSTEM (Users may read and run what it
//     holds): C:\k made by an administrator, or by a provisioning tool
//     running as SYSTEM, inherits C:\'s grants;
//   - a folder TrustedInstaller owns is the system's own (C:\Windows,
//     C:\Program Files): trusted and left as it is;
//   - the drive's root and the folders every user shares (C:\ProgramData,
//     C:\Users) are never changed: a program directly in one is refused
//     when others may change what it holds.

// programACL is the DACL of a program folder swdt repaired.
var programACL = winos.ACL{Protected: true, Entries: []winos.ACE{
	{SID: winos.SIDAdministrators, Mask: winos.FileAllAccess, Inherit: true},
	{SID: winos.SIDSystem, Mask: winos.FileAllAccess, Inherit: true},
	{SID: winos.SIDUsers, Mask: winos.FileReadExecute, Inherit: true},
}}

// programFolders are the folders of destinations, each once.
func programFolders(destinations []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range destinations {
		dir := winpath.Dir(winpath.Clean(d))
		if dir == "" || seen[strings.ToLower(dir)] {
			continue
		}
		seen[strings.ToLower(dir)] = true
		out = append(out, dir)
	}
	return out
}

// secureProgramFolder makes the folder dir safe to put a program in, or
// fails with unsafe-folder before it changes anything; a missing dir is
// left to whoever creates it. The note says what was repaired.
func secureProgramFolder(w winos.OS, dir string) (note string, err error) {
	unsafe, err := programFolderProblems(w, []string{dir})
	if err != nil {
		return "", err
	}
	if len(unsafe) > 0 {
		return "", Fail(ops.KindUnsafeFolder, "%s; nothing was changed (docs/security.md)", strings.Join(unsafe, "; "))
	}
	owner, err := w.Owner(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the owner of %s: %w", dir, err)
	}
	chain := folderChain(dir)
	if owner == winos.SIDTrustedInstaller || len(chain) == 0 || sharedFolder(dir) {
		return "", nil
	}
	kept, err := footprintKept(w)
	if err != nil || !kept {
		// No security descriptor is kept here (Wine): nothing to check.
		return "", err
	}
	self, err := w.CurrentUser()
	if err != nil {
		return "", fmt.Errorf("read the current user: %w", err)
	}
	for _, p := range chain[:len(chain)-1] {
		acl, err := w.ACL(p)
		if err != nil {
			return "", fmt.Errorf("read the ACL of %s: %w", p, err)
		}
		if sid := othersMayReplace(acl, self); sid != "" {
			return "", Fail(ops.KindUnsafeFolder, "%s lets %s delete, rename or re-permission what it holds, and so replace the programs in %s: nothing was changed; "+
				"as an administrator, take that right away (icacls %s /remove *%s) and run swdt again", p, sid, dir, p, sid)
		}
	}
	wrong, _, err := secureFolderWith(w, dir, ops.KindUnsafeFolder, programACL)
	if err != nil || wrong == "" {
		return "", err
	}
	return fmt.Sprintf("%s was not safe for programs that run as SYSTEM (%s): it now belongs to Administrators, and only Administrators and SYSTEM may change what it holds", dir, wrong), nil
}

// securePrograms makes the folders of the swap's destinations safe
// (secureProgramFolder) before anything stops; what was repaired is noted
// on the items in that folder.
func (s *swapRun) securePrograms() error {
	var dests []string
	for i, it := range s.req.Items {
		if s.items[i].result.Result != ops.SwapResultFailed {
			dests = append(dests, it.Destination)
		}
	}
	for _, dir := range programFolders(dests) {
		note, err := secureProgramFolder(s.w, dir)
		if err != nil {
			return beforeStop(err)
		}
		if note == "" {
			continue
		}
		for i, it := range s.req.Items {
			if strings.EqualFold(winpath.Dir(winpath.Clean(it.Destination)), dir) {
				s.items[i].result.Notes = append(s.items[i].result.Notes, note)
			}
		}
	}
	return nil
}

// sharedFolders are the folders below a drive's root that every user
// shares, by lower-case name.
var sharedFolders = []string{"programdata", "users", "windows", "program files", "program files (x86)"}

// sharedFolder reports whether dir is one of sharedFolders.
func sharedFolder(dir string) bool {
	chain := folderChain(dir)
	if len(chain) != 1 {
		return false
	}
	name := strings.ToLower(winpath.Base(dir))
	for _, s := range sharedFolders {
		if name == s {
			return true
		}
	}
	return false
}

// programFolderProblems lists, without changing anything, what makes the
// folders dirs unfit to hold programs, each with what to do: a folder of
// theirs, or one above it, that another account owns (joinUnsafe); the
// drive's root or a folder every user shares, when others may change
// what it holds.
func programFolderProblems(w winos.OS, dirs []string) ([]string, error) {
	out, err := joinUnsafe(w, dirs)
	if err != nil {
		return nil, err
	}
	for _, dir := range dirs {
		if len(folderChain(dir)) > 0 && !sharedFolder(dir) {
			continue
		}
		acl, err := w.ACL(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the ACL of %s: %w", dir, err)
		}
		if !onlyAdminsWrite(acl) {
			out = append(out, fmt.Sprintf("%s is shared by every user, and accounts other than Administrators and SYSTEM may change it: "+
				"swdt does not put programs that run as SYSTEM directly in it; choose a folder of their own (C:\\k, C:\\Program Files\\NAME)", dir))
		}
	}
	return out, nil
}
