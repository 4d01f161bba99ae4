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

// asUser makes cmd run as uid:gid (libvirtd in session mode must not run
// as root).
func asUser(cmd *exec.Cmd, uid, gid int) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}
