//go:build !linux

package ntfs

import "os"

// hostClone puts src's n bytes at off into dst at at, through a buffer.
func hostClone(dst, src *os.File, off, at, n int64) error {
	if err := dst.Truncate(at + n); err != nil {
		return err
	}
	return copyRange(dst, src, off, at, n)
}
