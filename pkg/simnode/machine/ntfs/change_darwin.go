package ntfs

import (
	"fmt"
	"os"
	"syscall"
)

// changeStamp identifies the host file's content version by its device,
// inode, size, modification time and status-change time. The change time
// moves with every write, and no program can set it back (os.Chtimes
// sets the modification time only).
func changeStamp(fi os.FileInfo) (string, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%d:%d:%d.%09d:%d:%d", st.Dev, st.Ino, st.Ctimespec.Sec, st.Ctimespec.Nsec, fi.Size(), fi.ModTime().UnixNano()), true
}
