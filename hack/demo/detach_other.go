//go:build !unix

package main

import "os/exec"

// detach does nothing where process groups do not exist: a Ctrl-C stops
// simnode and swdt together.
func detach(*exec.Cmd) {}
