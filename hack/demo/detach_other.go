//go:build !unix

package main

import "os/exec"

// detach does nothing where process groups do not exist: a Ctrl-C stops
// simnode and swdt together.
func detach(*exec.Cmd) {}

// asUser is a no-op: libvirtd, the only command the demo runs as another
// user, exists only on unix systems.
func asUser(*exec.Cmd, int, int) {}
