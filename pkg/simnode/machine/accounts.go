package machine

import (
	"bytes"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// ensureProfiles gives each non-administrator account its profile folder,
// C:\Users\<name>, owned by it and closed to other users, as Windows
// creates at the first logon.
func (m *Machine) ensureProfiles(accounts []Account) error {
	for _, a := range accounts {
		if a.Admin {
			continue
		}
		home := `C:\Users\` + a.Name
		if err := m.vol.Mkdir(home, true); err != nil {
			return err
		}
		w, err := ntfs.ParsePath(home)
		if err != nil {
			return err
		}
		if err := m.update(func(st *State, _ time.Time) error {
			st.Owners[w.Key()] = a.Name
			if st.ACLs[w.Key()] == nil {
				st.ACLs[w.Key()] = ntfs.ProfileACL(a.Name)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// SSHDAdminKeys returns the keys sshd (Win32-OpenSSH) would accept from
// administrators_authorized_keys for the node's account: none when the
// file is missing, grants access beyond Administrators and SYSTEM, has an
// owner sshd refuses (SSHDAcceptsOwner), or holds NUL bytes (UTF-16,
// which sshd reads as garbage without a word in its log). Lines are taken
// byte for byte, so a byte order mark spoils the line it starts.
func (n *Node) SSHDAdminKeys() []string {
	raw, err := n.ReadFile(PathAdminAuthorizedKeys)
	if err != nil || bytes.IndexByte(raw, 0) >= 0 {
		return nil
	}
	if acl, err := n.ACL(PathAdminAuthorizedKeys); err != nil || !AdminOnlyACL(acl) || !n.SSHDAcceptsOwner(PathAdminAuthorizedKeys, n.account.Name) {
		return nil
	}
	var keys []string
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		fields := strings.Fields(line)
		if len(fields) >= 2 && (strings.HasPrefix(fields[0], "ssh-") || strings.HasPrefix(fields[0], "ecdsa-")) {
			keys = append(keys, line)
		}
	}
	return keys
}

// SSHDAcceptsOwner reports whether sshd (Win32-OpenSSH's
// check_secure_file_permission) accepts the owner of a key file read for
// user: Administrators, SYSTEM, TrustedInstaller or user itself. Any other
// owner may rewrite the file's DACL at will, so sshd refuses the file
// ("Bad owner on ...") and key authentication falls through.
func (n *Node) SSHDAcceptsOwner(p, user string) bool {
	owner, err := n.Owner(p)
	if err != nil {
		return false
	}
	switch strings.ToLower(owner) {
	case strings.ToLower(AccountAdministrators), strings.ToLower(AccountSystem), `nt service\trustedinstaller`:
		return true
	}
	o, u := strings.ToLower(owner), strings.ToLower(user)
	return o == u || strings.HasSuffix(o, `\`+u)
}
