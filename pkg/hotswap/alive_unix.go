//go:build unix

package hotswap

import (
	"errors"
	"syscall"
)

// processAlive reports whether process pid of this machine still runs
// (a process swdt may not signal is alive).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
