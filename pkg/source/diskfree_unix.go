//go:build linux || darwin

package source

import "golang.org/x/sys/unix"

// diskFree returns the bytes available to this user in dir's file system;
// ok is false when they cannot be read.
func diskFree(dir string) (free uint64, ok bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
