package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode/utf16"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// keysDir holds administrators_authorized_keys.
const keysDir = `C:\ProgramData\ssh`

// keysAdminOnly is the ACL sshd requires of administrators_authorized_keys
// (icacls /inheritance:r /grant Administrators:F /grant SYSTEM:F);
// otherwise it ignores the file and key auth quietly falls through.
var keysAdminOnly = winos.ACL{Protected: true, Entries: []winos.ACE{
	{SID: winos.SIDAdministrators, Mask: winos.FileAllAccess},
	{SID: winos.SIDSystem, Mask: winos.FileAllAccess},
}}

// keysFile is administrators_authorized_keys as read.
type keysFile struct {
	exists bool
	// raw is the file's bytes; text is them decoded, without a byte order
	// mark.
	raw  []byte
	text string
	// encoding is one of the ops.Encoding* constants.
	encoding string
}

// keysRead reads and decodes the file; a missing file is empty.
func keysRead(w winos.OS) (keysFile, error) {
	f, err := w.Open(ops.AdministratorsAuthorizedKeys)
	if errors.Is(err, fs.ErrNotExist) {
		return keysFile{}, nil
	}
	if err != nil {
		return keysFile{}, fmt.Errorf("open %s: %w", ops.AdministratorsAuthorizedKeys, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(f)
	if err != nil {
		return keysFile{}, fmt.Errorf("read %s: %w", ops.AdministratorsAuthorizedKeys, err)
	}
	text, enc := keysDecode(raw)
	return keysFile{exists: true, raw: raw, text: text, encoding: enc}, nil
}

// keysDecode decodes the file by its byte order mark, or by NUL bytes for
// UTF-16 without one (ASCII text leaves every other byte NUL; sshd reads
// such a file as garbage). Anything else is taken as UTF-8.
func keysDecode(raw []byte) (text, encoding string) {
	switch {
	case bytes.HasPrefix(raw, []byte{0xEF, 0xBB, 0xBF}):
		return string(raw[3:]), ops.EncodingUTF8BOM
	case bytes.HasPrefix(raw, []byte{0xFF, 0xFE}):
		return keysUTF16(raw[2:], false), ops.EncodingUTF16LE
	case bytes.HasPrefix(raw, []byte{0xFE, 0xFF}):
		return keysUTF16(raw[2:], true), ops.EncodingUTF16BE
	case bytes.IndexByte(raw, 0) >= 0:
		var even, odd int
		for i, b := range raw {
			if b == 0 && i%2 == 0 {
				even++
			} else if b == 0 {
				odd++
			}
		}
		if even > odd {
			return keysUTF16(raw, true), ops.EncodingUTF16BE
		}
		return keysUTF16(raw, false), ops.EncodingUTF16LE
	}
	return string(raw), ops.EncodingUTF8
}

// keysUTF16 decodes UTF-16 text; a trailing odd byte is dropped.
func keysUTF16(raw []byte, bigEndian bool) string {
	units := make([]uint16, len(raw)/2)
	for i := range units {
		hi, lo := raw[2*i+1], raw[2*i]
		if bigEndian {
			hi, lo = lo, hi
		}
		units[i] = uint16(hi)<<8 | uint16(lo)
	}
	return string(utf16.Decode(units))
}

// keysLines returns the trimmed non-empty lines of the file's text.
func keysLines(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// keysOnly drops comment lines.
func keysOnly(lines []string) []string {
	out := []string{}
	for _, l := range lines {
		if !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// keysID identifies a key line by its type and base64 blob, ignoring
// options and the comment, so that a key under another (or differently
// encoded) comment is not appended again. A line without a recognizable
// key is its own identity. Base64 is case-sensitive, and so is this.
func keysID(line string) string {
	fields := strings.Fields(line)
	for i := 0; i+1 < len(fields); i++ {
		t := fields[i]
		if strings.HasPrefix(t, "ssh-") || strings.HasPrefix(t, "ecdsa-sha2-") || strings.HasPrefix(t, "sk-") {
			return t + " " + fields[i+1]
		}
	}
	return line
}

// keysACLOK reports whether sshd accepts the file's ACL: inheritance off
// and no allow entry for anyone but Administrators and SYSTEM.
func keysACLOK(acl winos.ACL) bool {
	if !acl.Protected {
		return false
	}
	allowed := 0
	for _, e := range acl.Entries {
		if e.Deny {
			continue
		}
		if e.SID != winos.SIDAdministrators && e.SID != winos.SIDSystem {
			return false
		}
		allowed++
	}
	return allowed > 0
}

// keysState describes the file for setup-facts.
func keysState(w winos.OS) (ops.AuthorizedKeysState, error) {
	st := ops.AuthorizedKeysState{Keys: []string{}}
	kf, err := keysRead(w)
	if err != nil || !kf.exists {
		return st, err
	}
	st.Exists, st.Encoding, st.Keys = true, kf.encoding, keysOnly(keysLines(kf.text))
	acl, err := w.ACL(ops.AdministratorsAuthorizedKeys)
	if err != nil {
		return st, fmt.Errorf("read the ACL of %s: %w", ops.AdministratorsAuthorizedKeys, err)
	}
	st.ACLOK = keysACLOK(acl)
	if st.Owner, err = w.Owner(ops.AdministratorsAuthorizedKeys); err != nil {
		return st, fmt.Errorf("read the owner of %s: %w", ops.AdministratorsAuthorizedKeys, err)
	}
	st.OwnerOK = adminSID(st.Owner)
	return st, nil
}

// keysOwn gives the file to Administrators unless Administrators or
// SYSTEM own it already (sshd refuses a file another account owns: that
// account may rewrite its ACL), and returns the owner read back. A system
// that accepts the change but keeps no security descriptor (Wine) reads
// back the old owner, and the caller reports it as not fixed.
func keysOwn(w winos.OS) (string, error) {
	owner, err := w.Owner(ops.AdministratorsAuthorizedKeys)
	if err != nil {
		return "", fmt.Errorf("read the owner of %s: %w", ops.AdministratorsAuthorizedKeys, err)
	}
	if adminSID(owner) {
		return owner, nil
	}
	if err := w.SetOwner(ops.AdministratorsAuthorizedKeys, winos.SIDAdministrators); err != nil {
		return "", fmt.Errorf("give %s (owned by %s) to Administrators: %w", ops.AdministratorsAuthorizedKeys, owner, err)
	}
	if owner, err = w.Owner(ops.AdministratorsAuthorizedKeys); err != nil {
		return "", fmt.Errorf("read the owner of %s: %w", ops.AdministratorsAuthorizedKeys, err)
	}
	return owner, nil
}

// authorizedKeysAdd appends the missing keys (never removing a line),
// rewrites a file in any encoding but UTF-8 without BOM as that, gives it
// to Administrators and restricts it to Administrators and SYSTEM. The
// owner is set before the ACL: an owner may always rewrite the ACL.
func authorizedKeysAdd(_ context.Context, w winos.OS, req ops.AuthorizedKeysAddRequest) (ops.AuthorizedKeysState, error) {
	for _, k := range req.Keys {
		if strings.ContainsAny(k, "\r\n\x00") {
			return ops.AuthorizedKeysState{}, Fail(ops.KindBadRequest, "a key must be one line of an authorized_keys file: %q", k)
		}
	}
	user, err := w.CurrentUser()
	if err != nil {
		return ops.AuthorizedKeysState{}, fmt.Errorf("read the current user: %w", err)
	}
	if !user.Admin {
		return ops.AuthorizedKeysState{}, Fail(ops.KindAccessDenied, "access to %s is denied: only a member of Administrators may "+
			"change it, and %s is not one", ops.AdministratorsAuthorizedKeys, user.Name)
	}
	if err := w.MkdirAll(keysDir); err != nil {
		return ops.AuthorizedKeysState{}, fmt.Errorf("create %s: %w", keysDir, err)
	}
	aside, err := keysSetAsideUntrusted(w)
	if err != nil {
		return ops.AuthorizedKeysState{}, err
	}
	kf, err := keysRead(w)
	if err != nil {
		return ops.AuthorizedKeysState{}, err
	}
	// An UTF-8 file keeps its bytes (and line endings) as they are; any
	// other is rewritten as UTF-8 with its lines.
	content := kf.raw
	rewrite := kf.exists && kf.encoding != ops.EncodingUTF8
	if rewrite {
		content = []byte(kf.text)
	}
	lines := keysLines(kf.text)
	present := map[string]bool{}
	for _, l := range lines {
		present[keysID(l)] = true
	}
	added := 0
	for _, k := range req.Keys {
		line := strings.TrimSpace(k)
		if line == "" || present[keysID(line)] {
			continue
		}
		if len(content) > 0 && content[len(content)-1] != '\n' {
			content = append(content, "\r\n"...)
		}
		content = append(content, line+"\r\n"...)
		lines = append(lines, line)
		present[keysID(line)] = true
		added++
	}
	if !kf.exists || rewrite || added > 0 {
		if err := w.WriteFile(ops.AdministratorsAuthorizedKeys, content); err != nil {
			return ops.AuthorizedKeysState{}, fmt.Errorf("write %s: %w", ops.AdministratorsAuthorizedKeys, err)
		}
	}
	owner, err := keysOwn(w)
	if err != nil {
		return ops.AuthorizedKeysState{}, err
	}
	acl, err := w.ACL(ops.AdministratorsAuthorizedKeys)
	if err != nil {
		return ops.AuthorizedKeysState{}, fmt.Errorf("read the ACL of %s: %w", ops.AdministratorsAuthorizedKeys, err)
	}
	if !keysACLOK(acl) {
		if err := w.SetACL(ops.AdministratorsAuthorizedKeys, keysAdminOnly); err != nil {
			return ops.AuthorizedKeysState{}, fmt.Errorf("restrict %s to Administrators and SYSTEM: %w", ops.AdministratorsAuthorizedKeys, err)
		}
		if acl, err = w.ACL(ops.AdministratorsAuthorizedKeys); err != nil {
			return ops.AuthorizedKeysState{}, fmt.Errorf("read the ACL of %s: %w", ops.AdministratorsAuthorizedKeys, err)
		}
	}
	return ops.AuthorizedKeysState{Exists: true, Encoding: ops.EncodingUTF8, Keys: keysOnly(lines), ACLOK: keysACLOK(acl),
		OwnerOK: adminSID(owner), Owner: owner, Added: added, SetAside: aside}, nil
}

// keysSetAsideUntrusted moves administrators_authorized_keys aside,
// unread, when an account other than Administrators, SYSTEM and the
// agent's own owns it (it created the file first): sshd does not trust
// such a file, and taking its lines over would make keys an ordinary user
// planted valid Administrator keys. It returns where the file went (""
// when it was left).
func keysSetAsideUntrusted(w winos.OS) (string, error) {
	p := ops.AdministratorsAuthorizedKeys
	owner, ok, err := adminsOwn(w, p)
	if errors.Is(err, fs.ErrNotExist) || err == nil && ok {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	aside := ops.UntrustedPath(p)
	if err := removeFree(w, aside); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("remove %s: %w", aside, err)
	}
	if err := w.Rename(p, aside); err != nil {
		return "", fmt.Errorf("%s is owned by %s, not by Administrators or SYSTEM, and cannot be moved aside: %w", p, owner, err)
	}
	return aside, nil
}
