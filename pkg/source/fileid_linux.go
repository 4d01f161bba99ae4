package source

import (
	"io/fs"
	"syscall"
)

// statFileID reads path's fileID from info, its os.Stat; ok is false when
// it cannot be known.
func statFileID(_ string, info fs.FileInfo) (id fileID, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{Device: uint64(st.Dev), Index: uint64(st.Ino), Change: st.Ctim.Nano()}, true
}
