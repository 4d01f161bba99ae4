//go:build !linux

package clustertest

import (
	"os"
	"syscall"
)

// dieWithParent is Linux's parent-death signal; elsewhere the test's
// cleanup stops the processes.
func dieWithParent() *syscall.SysProcAttr { return nil }

// tryLock is never reached off Linux: NetworkSkip skips first.
func tryLock(*os.File) bool { return false }
