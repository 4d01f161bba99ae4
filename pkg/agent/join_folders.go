package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The folders of a join hold the kubelet's credentials (the bootstrap
// token, its client key) and what the services run as SYSTEM read (their
// configuration, the CNI plugins). They lie below C:\, where Windows lets
// any user create folders: a folder a non-administrator made before the
// join is theirs, and so is everything they put in it. So, as for the
// agent's footprint (footprint.go), a join checks them before it writes:
//
//   - a folder of the join, or a folder above one, that another account
//     owns is refused (what it holds is unknown: the agent cannot tell
//     that account's files from swdt's without listing it);
//   - a folder of the join that Administrators own but others may change
//     (the default a folder below C:\ inherits) is given to Administrators
//     and SYSTEM alone;
//   - a folder above one that lets others delete, rename or re-permission
//     what is in it is refused: swdt does not change folders other
//     software may share;
//   - a file at a name the join or the kubelet uses that another account
//     owns is removed unread.

// joinFolders are the folders a join writes in: the kubelet's always,
// containerd's configuration folder, the CNI plugins' folder and the
// folders of the log files (of ops.JoinLogs) when asked.
func joinFolders(containerd, cni bool, logs []string) []string {
	dir := winpath.Dir
	dirs := []string{dir(ops.JoinKubeconfig), dir(ops.JoinCAFile), dir(ops.JoinKubeletConfig), ops.JoinCertDir}
	if containerd {
		dirs = append(dirs, dir(ops.JoinContainerdConfig))
	}
	if cni {
		dirs = append(dirs, ops.JoinCNIBinDir)
	}
	for _, l := range logs {
		dirs = append(dirs, dir(l))
	}
	slices.Sort(dirs) // a folder before the folders below it
	return slices.Compact(dirs)
}

// joinKubeletFiles are files the kubelet reads at fixed names once they
// exist: its kubeconfig, written after TLS bootstrap, and its
// certificates and keys.
var joinKubeletFiles = []string{
	ops.JoinKubeconfig,
	ops.JoinCertDir + `\kubelet-client-current.pem`,
	ops.JoinCertDir + `\kubelet.crt`,
	ops.JoinCertDir + `\kubelet.key`,
}

// folderChain lists the folders from below the drive's root down to dir.
func folderChain(dir string) []string {
	parts := strings.Split(strings.TrimRight(dir, `\`), `\`)
	var out []string
	for i := 2; i <= len(parts); i++ {
		out = append(out, strings.Join(parts[:i], `\`))
	}
	return out
}

// joinUnsafe lists the folders of dirs, and the folders above them, that
// exist and that an account other than Administrators, SYSTEM or the
// agent's own owns, each with what to do.
func joinUnsafe(w winos.OS, dirs []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, d := range dirs {
		for _, p := range folderChain(d) {
			if seen[strings.ToLower(p)] {
				continue
			}
			seen[strings.ToLower(p)] = true
			owner, ok, err := adminsOwn(w, p)
			if errors.Is(err, fs.ErrNotExist) {
				break // nor do the folders below it
			}
			if err != nil {
				return nil, err
			}
			if !ok {
				out = append(out, fmt.Sprintf("%s is owned by %s, who may change what swdt puts below it: as an administrator, look at what it holds and delete it (rmdir /s /q %s)", p, owner, p))
			}
		}
	}
	return out, nil
}

// replaceRights are the rights that let an account delete, rename or
// re-permission what a folder holds (DELETE, WRITE_DAC, WRITE_OWNER,
// FILE_DELETE_CHILD, GENERIC_ALL).
const replaceRights = 0x10000 | 0x40000 | 0x80000 | 0x40 | 0x10000000

// othersMayReplace names an account other than Administrators, SYSTEM
// and self that acl lets replace what the folder holds, or "".
func othersMayReplace(acl winos.ACL, self winos.User) string {
	for _, e := range acl.Entries {
		switch {
		case e.Deny, adminSID(e.SID), e.SID == winos.SIDCreatorOwner:
			// CREATOR OWNER stands for whoever creates something below.
		case self.Admin && (e.SID == self.SID || e.SID == self.Owner):
		case e.Mask&replaceRights != 0:
			return e.SID
		}
	}
	return ""
}

// secureJoinFolders makes dirs safe for a join's files, or fails with
// unsafe-folder before anything is written in them. Notes say what was
// repaired.
func secureJoinFolders(w winos.OS, dirs []string) ([]string, error) {
	unsafe, err := joinUnsafe(w, dirs)
	if err != nil {
		return nil, err
	}
	if len(unsafe) > 0 {
		return nil, Fail(ops.KindUnsafeFolder, "%s; nothing was written", strings.Join(unsafe, "; "))
	}
	var notes []string
	kept := true
	for _, d := range dirs {
		if err := w.MkdirAll(d); err != nil {
			return notes, fmt.Errorf("create %s: %w", d, err)
		}
		wrong, k, err := secureFolder(w, d, ops.KindUnsafeFolder)
		if err != nil {
			return notes, err
		}
		kept = kept && k
		if wrong != "" {
			notes = append(notes, fmt.Sprintf("%s was not safe (%s): it now belongs to Administrators, and only Administrators and SYSTEM may change it", d, wrong))
		}
	}
	if !kept {
		// No security descriptor is kept here (Wine): there is nothing
		// to check above the folders either.
		return notes, nil
	}
	self, err := w.CurrentUser()
	if err != nil {
		return notes, fmt.Errorf("read the current user: %w", err)
	}
	seen := map[string]bool{}
	for _, d := range dirs {
		for _, p := range folderChain(d) {
			if seen[strings.ToLower(p)] || slices.ContainsFunc(dirs, func(x string) bool { return strings.EqualFold(x, p) }) {
				continue
			}
			seen[strings.ToLower(p)] = true
			acl, err := w.ACL(p)
			if err != nil {
				return notes, fmt.Errorf("read the ACL of %s: %w", p, err)
			}
			if sid := othersMayReplace(acl, self); sid != "" {
				return notes, Fail(ops.KindUnsafeFolder, "%s lets %s delete, rename or re-permission what it holds, and so replace %s: nothing was written; "+
					"as an administrator, take that right away (icacls %s /remove *%s) and run swdt join again", p, sid, d, p, sid)
			}
		}
	}
	return notes, nil
}
