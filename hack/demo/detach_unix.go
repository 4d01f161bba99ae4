//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// detach puts cmd in a process group of its own, so that a Ctrl-C in the
// terminal reaches only the demo, which then interrupts swdt once and stops
// simnode after swdt is done.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
