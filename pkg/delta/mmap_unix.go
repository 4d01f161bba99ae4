//go:build unix

package delta

import (
	"os"
	"syscall"
	"unsafe"
)

// mapTable maps the file f (size bytes) read-only and returns its
// 8-byte words from off (a multiple of 8) as a table, and how to unmap
// it; ok is false when it cannot be mapped.
func mapTable(f *os.File, size, off int64) (tab []uint64, unmap func(), ok bool) {
	if int64(int(size)) != size || off%8 != 0 {
		return nil, nil, false
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	words := m[off:]
	tab = unsafe.Slice((*uint64)(unsafe.Pointer(&words[0])), len(words)/8)
	return tab, func() { _ = syscall.Munmap(m) }, true
}
