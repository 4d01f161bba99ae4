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
// unchanged apart from cleaning, so converting twice is harmless. Relative
// paths stay relative (to the login user's home directory).
func SFTPPath(windowsPath string) string {
	p := strings.ReplaceAll(windowsPath, `\`, "/")
	if p == "" {
		return ""
	}
	if isDrive(p) {
		// C: or C:/... -> /C:/...
		p = "/" + strings.ToUpper(p[:1]) + p[1:]
	} else if len(p) > 1 && p[0] == '/' && isDrive(p[1:]) {
		p = "/" + strings.ToUpper(p[1:2]) + p[2:]
	}
	if strings.HasPrefix(p, "//") {
		// UNC path (\\server\share): keep the double slash Clean would eat.
		return "/" + path.Clean(p[1:])
	}
	if isDrive(strings.TrimPrefix(p, "/")) && len(strings.TrimPrefix(p, "/")) == 2 {
		return p + "/"
	}
	c := path.Clean(p)
	// Clean must never climb above a drive root: /C:/.. stays /C:/.
	if strings.HasPrefix(p, "/") && len(p) >= 3 && isDrive(p[1:]) && !(len(c) >= 3 && isDrive(c[1:])) {
		return p[:3] + "/"
	}
	return c
}

// isDrive reports whether p starts with a drive letter and colon followed
// by nothing or a slash.
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
