//go:build unix && !linux

package main

import "os/exec"

// setParentDeathSignal does nothing where the system has no parent-death
// signal: a killed bench leaves its children to the user.
func setParentDeathSignal(*exec.Cmd) {}
