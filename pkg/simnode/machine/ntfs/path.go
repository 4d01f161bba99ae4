package ntfs

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

// Path is a canonical absolute Windows path: upper-case drive letter,
// backslashes, no trailing backslash except for a drive root ("C:\").
type Path string

// ParsePath accepts the spellings swdt and OpenSSH use for one file:
// C:\k\kubelet.exe, c:/k/kubelet.exe, /C:/k/kubelet.exe, and the form the
// SFTP request server produces for a drive path sent as relative
// (/C:/Users/Administrator/C:/k/kubelet.exe, where the last drive wins as
// on Windows OpenSSH). ".." may not climb above the drive root.
func ParsePath(p string) (Path, error) {
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
	return Path(drive + `\` + strings.Join(out, `\`)), nil
}

// IsDrive reports whether s is a drive name such as C:.
func IsDrive(s string) bool {
	return len(s) == 2 && s[1] == ':' && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
}

// String returns the path as Windows prints it.
func (w Path) String() string { return string(w) }

// Key is the case-insensitive identity of the path (NTFS ignores case).
func (w Path) Key() string { return strings.ToLower(string(w)) }

// Drive returns "C".
func (w Path) Drive() string { return string(w[:1]) }

// Elems returns the components below the drive root.
func (w Path) Elems() []string {
	rest := strings.TrimPrefix(string(w)[2:], `\`)
	if rest == "" {
		return nil
	}
	return strings.Split(rest, `\`)
}

// IsRoot reports whether w is a drive root.
func (w Path) IsRoot() bool { return len(w.Elems()) == 0 }

// Dir returns the parent directory (a root is its own parent).
func (w Path) Dir() Path {
	e := w.Elems()
	if len(e) <= 1 {
		return Path(w.Drive() + `:\`)
	}
	return Path(w.Drive() + `:\` + strings.Join(e[:len(e)-1], `\`))
}

// Base returns the last component.
func (w Path) Base() string {
	e := w.Elems()
	if len(e) == 0 {
		return w.Drive() + ":"
	}
	return e[len(e)-1]
}

// Join appends a component.
func (w Path) Join(name string) Path {
	if w.IsRoot() {
		return Path(w.Drive() + `:\` + name)
	}
	return Path(string(w) + `\` + name)
}

// SFTPPath is the form Windows OpenSSH's sftp-server reports: /C:/k/x.
func (w Path) SFTPPath() string {
	return "/" + strings.ReplaceAll(strings.TrimSuffix(string(w), `\`), `\`, "/")
}

// Resolve maps w to the host path below fsRoot, matching each existing
// component case-insensitively as NTFS does, so C:\K\Kubelet.EXE finds
// C:\k\kubelet.exe. Components that do not exist keep their spelling. It
// also returns the canonical path with the on-disk spelling.
func Resolve(fsRoot string, w Path) (host string, canon Path, err error) {
	host = filepath.Join(fsRoot, w.Drive())
	if _, err := os.Stat(host); err != nil {
		return "", "", fmt.Errorf("drive %s: is not present: %w", w.Drive(), os.ErrNotExist)
	}
	canon = Path(w.Drive() + `:\`)
	for _, e := range w.Elems() {
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
		canon = canon.Join(e)
	}
	return host, canon, nil
}

// SiblingPath is the canonical path of name in p's directory.
func SiblingPath(p, name string) (string, error) {
	w, err := ParsePath(p)
	if err != nil {
		return "", err
	}
	return string(w.Dir().Join(name)), nil
}

// PathBase is the last component of p.
func PathBase(p string) (string, error) {
	w, err := ParsePath(p)
	if err != nil {
		return "", err
	}
	return w.Base(), nil
}

// SamePath reports whether a and b name one file (NTFS ignores case).
func SamePath(a, b string) bool {
	wa, err := ParsePath(a)
	if err != nil {
		return false
	}
	wb, err := ParsePath(b)
	return err == nil && wa.Key() == wb.Key()
}
