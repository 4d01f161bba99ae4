package remote

import (
	"path"
	"strings"
)

// SFTPPath turns a Windows path such as C:\k\kubelet.exe into the path
// Windows OpenSSH's SFTP server expects, /C:/k/kubelet.exe. By the SFTP
// spec C:/k is a relative path, so the leading slash matters.
//
// Already-converted paths (/C:/k/...) and POSIX paths (/tmp/x) come back
// unchanged apart from cleaning, so converting twice is harmless. ".."
// never climbs above a drive root. Relative paths stay relative (to the
// login user's home directory).
func SFTPPath(windowsPath string) string {
	p := strings.ReplaceAll(windowsPath, `\`, "/")
	switch {
	case p == "":
		return ""
	case isDrive(p):
		return driveRoot(p[0]) + path.Clean("/" + p[2:])[1:]
	case p[0] == '/' && isDrive(p[1:]):
		return driveRoot(p[1]) + path.Clean("/" + p[3:])[1:]
	case strings.HasPrefix(p, "//"):
		// UNC path (\\server\share): keep the double slash Clean would eat.
		return "/" + path.Clean(p[1:])
	}
	return path.Clean(p)
}

func driveRoot(letter byte) string {
	return "/" + strings.ToUpper(string(letter)) + ":/"
}

// isDrive reports whether p starts with a drive letter and a colon
// followed by nothing or a slash.
func isDrive(p string) bool {
	if len(p) < 2 || p[1] != ':' {
		return false
	}
	ch := p[0] | 0x20
	if ch < 'a' || ch > 'z' {
		return false
	}
	return len(p) == 2 || p[2] == '/'
}
