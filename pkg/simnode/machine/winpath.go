package machine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrBadPath is returned for paths that are not absolute Windows paths on
// a simulated drive, or that try to climb out of it.
var ErrBadPath = errors.New("the filename, directory name, or volume label syntax is incorrect")

// winPath is a canonical absolute Windows path: upper-case drive letter,
// backslashes, no trailing backslash except for a drive root ("C:\").
type winPath string

// parseWinPath accepts the spellings swdt and OpenSSH use for one file:
// C:\k\kubelet.exe, c:/k/kubelet.exe, /C:/k/kubelet.exe, and the form the
// SFTP request server produces for a drive path sent as relative
// (/C:/Users/Administrator/C:/k/kubelet.exe, where the last drive wins as
// on Windows OpenSSH). ".." may not climb above the drive root.
func parseWinPath(p string) (winPath, error) {
	s := strings.ReplaceAll(p, "\\", "/")
	parts := strings.Split(s, "/")
	drive := ""
	var out []string
	for _, part := range parts {
		switch {
		case part == "" || part == ".":
			continue
		case IsDrive(part):
			drive = strings.ToUpper(part)
			out = out[:0]
		case part == "..":
			if len(out) == 0 {
				return "", fmt.Errorf("%q: %w", p, ErrBadPath)
			}
			out = out[:len(out)-1]
		default:
			if drive == "" {
				return "", fmt.Errorf("%q is not an absolute Windows path: %w", p, ErrBadPath)
			}
			if strings.ContainsAny(part, `<>:"|?*`) || strings.ContainsRune(part, 0) {
				return "", fmt.Errorf("%q: %w", p, ErrBadPath)
			}
			out = append(out, part)
		}
	}
	if drive == "" {
		return "", fmt.Errorf("%q is not an absolute Windows path: %w", p, ErrBadPath)
	}
	return winPath(drive + `\` + strings.Join(out, `\`)), nil
}

// IsDrive reports whether s is a drive name such as C:.
func IsDrive(s string) bool {
	return len(s) == 2 && s[1] == ':' && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
}

// String returns the path as Windows prints it.
func (w winPath) String() string { return string(w) }

// key is the case-insensitive identity of the path (NTFS ignores case).
func (w winPath) key() string { return strings.ToLower(string(w)) }

// drive returns "C".
func (w winPath) drive() string { return string(w[:1]) }

// elems returns the components below the drive root.
func (w winPath) elems() []string {
	rest := strings.TrimPrefix(string(w)[2:], `\`)
	if rest == "" {
		return nil
	}
	return strings.Split(rest, `\`)
}

// isRoot reports whether w is a drive root.
func (w winPath) isRoot() bool { return len(w.elems()) == 0 }

// dir returns the parent directory (a root is its own parent).
func (w winPath) dir() winPath {
	e := w.elems()
	if len(e) <= 1 {
		return winPath(w.drive() + `:\`)
	}
	return winPath(w.drive() + `:\` + strings.Join(e[:len(e)-1], `\`))
}

// base returns the last component.
func (w winPath) base() string {
	e := w.elems()
	if len(e) == 0 {
		return w.drive() + ":"
	}
	return e[len(e)-1]
}

// join appends a component.
func (w winPath) join(name string) winPath {
	if w.isRoot() {
		return winPath(w.drive() + `:\` + name)
	}
	return winPath(string(w) + `\` + name)
}

// sftpPath is the form Windows OpenSSH's sftp-server reports: /C:/k/x.
func (w winPath) sftpPath() string {
	return "/" + strings.ReplaceAll(strings.TrimSuffix(string(w), `\`), `\`, "/")
}

// resolve maps w to the host path below fsRoot, matching each existing
// component case-insensitively as NTFS does, so C:\K\Kubelet.EXE finds
// C:\k\kubelet.exe. Components that do not exist keep their spelling. It
// also returns the canonical path with the on-disk spelling.
func resolve(fsRoot string, w winPath) (host string, canon winPath, err error) {
	host = filepath.Join(fsRoot, w.drive())
	if _, err := os.Stat(host); err != nil {
		return "", "", fmt.Errorf("drive %s: is not present: %w", w.drive(), os.ErrNotExist)
	}
	canon = winPath(w.drive() + `:\`)
	for _, e := range w.elems() {
		next := filepath.Join(host, e)
		if _, err := os.Lstat(next); err != nil {
			if entries, rerr := os.ReadDir(host); rerr == nil {
				for _, de := range entries {
					if strings.EqualFold(de.Name(), e) {
						e = de.Name()
						next = filepath.Join(host, e)
						break
					}
				}
			}
		}
		host = next
		canon = canon.join(e)
	}
	return host, canon, nil
}

// SiblingPath is the canonical path of name in p's directory.
func SiblingPath(p, name string) (string, error) {
	w, err := parseWinPath(p)
	if err != nil {
		return "", err
	}
	return string(w.dir().join(name)), nil
}

// PathBase is the last component of p.
func PathBase(p string) (string, error) {
	w, err := parseWinPath(p)
	if err != nil {
		return "", err
	}
	return w.base(), nil
}

// SamePath reports whether a and b name one file (NTFS ignores case).
func SamePath(a, b string) bool {
	wa, err := parseWinPath(a)
	if err != nil {
		return false
	}
	wb, err := parseWinPath(b)
	return err == nil && wa.key() == wb.key()
}
