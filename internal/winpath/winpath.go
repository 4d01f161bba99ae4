// Package winpath is the one place for the string functions on Windows
// paths that swdt runs on Linux and macOS too, where path/filepath knows
// only slashes: splitting a path into its folder and name, joining,
// cleaning, and comparing paths as Windows does (case-insensitively, a
// slash the same as a backslash). It never touches a file system; the
// conversion to the form SFTP takes is pkg/remote's (SFTPPath).
package winpath

import (
	"path"
	"strings"
)

// separators are the characters Windows takes between a path's elements.
const separators = `\/`

// isSep reports whether c separates a path's elements.
func isSep(c byte) bool { return c == '\\' || c == '/' }

// Base is the last element of p, a trailing separator ignored
// (`C:\k\logs\` is "logs").
func Base(p string) string {
	p = strings.TrimRight(p, separators)
	return p[strings.LastIndexAny(p, separators)+1:]
}

// Dir is the folder of p, written with p's separators, a trailing one
// ignored: "" for a bare name (which is in the current folder); a
// drive's root keeps its separator (`C:\x` is `C:\`), as does the root of
// a slashed path (`/x` is "/").
func Dir(p string) string {
	p = strings.TrimRight(p, separators)
	i := strings.LastIndexAny(p, separators)
	switch {
	case i < 0:
		return ""
	case i == 2 && p[1] == ':':
		return p[:3]
	case i == 0:
		return p[:1]
	}
	return p[:i]
}

// Join joins a folder and a name with the separator the folder is
// written with: a backslash (`C:\k`), or a slash when it has slashes only
// (C:/k, or /srv/k on a node whose SFTP server takes POSIX paths).
func Join(dir, name string) string {
	if dir == "" {
		return name
	}
	if isSep(dir[len(dir)-1]) {
		return dir + name
	}
	if strings.Contains(dir, "/") && !strings.Contains(dir, `\`) {
		return dir + "/" + name
	}
	return dir + `\` + name
}

// Clean is p with backslashes only, repeated separators collapsed and "."
// and ".." resolved; a trailing separator is dropped except at a drive's
// root (`C:\`), and a UNC path keeps its leading two.
func Clean(p string) string {
	if p == "" {
		return ""
	}
	slashed := strings.ReplaceAll(p, `\`, "/")
	unc := strings.HasPrefix(slashed, "//")
	c := path.Clean(slashed)
	switch {
	case unc:
		c = "/" + c
	case len(c) == 2 && c[1] == ':' && len(slashed) > 2 && slashed[2] == '/':
		c += "/" // path.Clean ends C:/ at C:
	}
	return strings.ReplaceAll(c, "/", `\`)
}

// Equal reports whether a and b name the same path as Windows sees it:
// cleaned, and case-insensitively.
func Equal(a, b string) bool { return strings.EqualFold(Clean(a), Clean(b)) }

// Within reports whether p is inside the folder dir, at any depth (not
// dir itself), as Windows sees it.
func Within(dir, p string) bool {
	d, c := Clean(dir), Clean(p)
	if !strings.HasSuffix(d, `\`) {
		d += `\`
	}
	return len(c) > len(d) && strings.EqualFold(c[:len(d)], d)
}
