package ntfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// hostClone puts src's n bytes at off into dst at at: shared blocks
// (FICLONERANGE) where the host's file system has them (btrfs, XFS),
// else a copy in the kernel (copy_file_range), else through a buffer.
func hostClone(dst, src *os.File, off, at, n int64) error {
	if err := dst.Truncate(at + n); err != nil {
		return err
	}
	r := unix.FileCloneRange{Src_fd: int64(src.Fd()), Src_offset: uint64(off), Src_length: uint64(n), Dest_offset: uint64(at)}
	if unix.IoctlFileCloneRange(int(dst.Fd()), &r) == nil {
		return nil
	}
	for n > 0 {
		roff, woff := off, at
		m, err := unix.CopyFileRange(int(src.Fd()), &roff, int(dst.Fd()), &woff, int(n), 0)
		if err != nil || m == 0 {
			return copyRange(dst, src, off, at, n)
		}
		off, at, n = off+int64(m), at+int64(m), n-int64(m)
	}
	return nil
}
