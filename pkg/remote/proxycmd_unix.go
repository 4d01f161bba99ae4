//go:build unix

package remote

import (
	"os"
	"os/exec"
	"syscall"
)

// shellCommand runs command as OpenSSH runs a ProxyCommand: with sh,
// prefixed by exec so that the shell is replaced by the command.
func shellCommand(command string) *exec.Cmd {
	return exec.Command("/bin/sh", "-c", "exec "+command)
}

// startKillable starts cmd in a process group of its own; kill ends the
// whole group, so that nothing the command started outlives it.
func startKillable(cmd *exec.Cmd) (kill func(), err error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	return func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }, nil
}

// endedByItself reports whether the command ended otherwise than by the
// SIGKILL of kill.
func endedByItself(st *os.ProcessState) bool {
	ws, ok := st.Sys().(syscall.WaitStatus)
	return ok && !(ws.Signaled() && ws.Signal() == syscall.SIGKILL)
}
