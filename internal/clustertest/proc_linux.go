package clustertest

import (
	"os"
	"syscall"
)

// dieWithParent ends a control-plane process with the test binary, even
// when the test is killed before its cleanup runs.
func dieWithParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }

// tryLock takes an exclusive flock on f without waiting; the kernel drops
// it when the process ends, however it ends.
func tryLock(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
