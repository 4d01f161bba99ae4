package clustertest

import "syscall"

// dieWithParent ends a control-plane process with the test binary, even
// when the test is killed before its cleanup runs.
func dieWithParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
