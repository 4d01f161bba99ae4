//go:build linux

// Command execwrap is the bench's timing parent: execwrap RESULT PROG
// ARGS... runs PROG with its own standard streams, measures it from its
// start to its exit, writes its wall time, CPU time and peak RSS to RESULT
// as JSON, and exits with PROG's status.
//
// It is a program of its own, with nothing but the standard library, so
// that it stays small: Go's os/exec starts a child with
// CLONE_VM|CLONE_VFORK, and Linux keeps the parent's peak RSS at that
// moment in the child's ru_maxrss. The bench started again in an exec
// mode did this before; its packages' initialisation (the simnode and
// client-go it links for other parts) held 41 MiB, so every client
// measured at least 41 MiB, /bin/true included.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// result is what it measured; bench/wrap.go's measured reads it.
type result struct {
	Wall     time.Duration `json:"wall"`
	CPU      time.Duration `json:"cpu"`
	MaxRSSKB int64         `json:"maxRSSKB"`
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: execwrap RESULT PROG ARGS...")
		return 2
	}
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "execwrap:", err)
		return 1
	}
	err := cmd.Wait()
	r := result{Wall: time.Since(start), CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSSKB = int64(ru.Maxrss) // kilobytes on Linux
	}
	raw, _ := json.Marshal(r)
	if werr := os.WriteFile(args[0], raw, 0o600); werr != nil {
		fmt.Fprintln(os.Stderr, "execwrap:", werr)
		return 1
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return 0
}
