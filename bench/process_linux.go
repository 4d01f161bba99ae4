//go:build linux

package main

import (
	"errors"
	"os/exec"
	"syscall"
)

// processAlive reports whether a process pid runs (signal 0 reaches it, or
// it runs as another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// diesWithBench makes cmd's process end when the bench does, however it
// ends (Linux's parent-death signal), so that a killed bench leaves no
// simnode or sshd running.
func diesWithBench(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
