//go:build !linux

package clustertest

import "syscall"

// dieWithParent is Linux's parent-death signal; elsewhere the test's
// cleanup stops the processes.
func dieWithParent() *syscall.SysProcAttr { return nil }
