//go:build unix

package remote

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// shellCommand runs command as OpenSSH runs a ProxyCommand: with sh,
// prefixed by exec so that the shell is replaced by the command.
func shellCommand(command string) *exec.Cmd {
	return exec.Command("/bin/sh", "-c", "exec "+command)
}

// quoteToken makes s one word for sh, whatever it holds: as it is when
// it has nothing sh would act on, else in single quotes.
func quoteToken(s string) string {
	if s != "" && strings.Trim(s, plainToken) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
