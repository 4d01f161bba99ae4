package winos

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// pipeDrainDelay bounds how long Run waits for a program's output pipes
// to close after the program exited or was killed: a grandchild that
// inherited them may hold them open for as long as it lives.
const pipeDrainDelay = 5 * time.Second

// Processes walks a Toolhelp snapshot for PIDs and image names, and asks
// each process for its image path and command line. Those need
// PROCESS_QUERY_LIMITED_INFORMATION, which the System process, protected
// processes and other users' processes may refuse: they are then "".
func (windowsOS) Processes() ([]Process, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, winErr("list processes", "Toolhelp snapshot", err)
	}
	defer windows.CloseHandle(snap)
	// One pair of buffers serves every process: the longest possible
	// path, and the longest possible command line (a UNICODE_STRING of up
	// to 64 KiB) after its header.
	path := make([]uint16, windows.MAX_LONG_PATH)
	cmdline := make([]uint64, (int(unsafe.Sizeof(windows.NTUnicodeString{}))+1<<16)/8+1)
	var out []Process
	e := windows.ProcessEntry32{Size: uint32(unsafe.Sizeof(windows.ProcessEntry32{}))}
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		p := Process{PID: int(e.ProcessID), ParentPID: int(e.ParentProcessID), Name: windows.UTF16ToString(e.ExeFile[:])}
		if h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, e.ProcessID); err == nil {
			p.Path = imagePath(h, path)
			p.CommandLine = commandLine(h, cmdline)
			var created, exited, kernel, user windows.Filetime
			if windows.GetProcessTimes(h, &created, &exited, &kernel, &user) == nil {
				p.Started = time.Unix(0, created.Nanoseconds())
			}
			windows.CloseHandle(h)
		}
		out = append(out, p)
	}
	if err != windows.ERROR_NO_MORE_FILES {
		return nil, winErr("list processes", "Toolhelp snapshot", err)
	}
	return out, nil
}

// imagePath is QueryFullProcessImageName into buf, "" when it fails.
func imagePath(h windows.Handle, buf []uint16) string {
	n := uint32(len(buf))
	if windows.QueryFullProcessImageName(h, 0, &buf[0], &n) != nil {
		return ""
	}
	return windows.UTF16ToString(buf[:n])
}

// commandLine is NtQueryInformationProcess(ProcessCommandLineInformation)
// (Windows 8.1 and later), "" when it fails. buf receives a
// UNICODE_STRING whose text follows it in buf.
func commandLine(h windows.Handle, buf []uint64) string {
	var n uint32
	err := windows.NtQueryInformationProcess(h, windows.ProcessCommandLineInformation,
		unsafe.Pointer(&buf[0]), uint32(len(buf)*8), &n)
	if err != nil {
		return ""
	}
	return (*windows.NTUnicodeString)(unsafe.Pointer(&buf[0])).String()
}

// KillProcess opens the process once and works on that handle only: it
// checks the creation time (a PID Windows gave to another process since
// the caller listed it is not killed), then TerminateProcess. A process
// that is gone fails OpenProcess with ERROR_INVALID_PARAMETER; one that
// has exited while some handle still holds it fails TerminateProcess with
// ERROR_ACCESS_DENIED, and is gone too.
func (windowsOS) KillProcess(pid int, started time.Time) error {
	target := strconv.Itoa(pid)
	h, err := windows.OpenProcess(windows.PROCESS_TERMINATE|windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return winErr("open process", target, err)
	}
	defer windows.CloseHandle(h)
	if !started.IsZero() {
		var created, exited, kernel, user windows.Filetime
		if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
			return winErr("read process times", target, err)
		}
		if !time.Unix(0, created.Nanoseconds()).Equal(started) {
			return &Error{Op: "open process", Target: target, Code: ErrInvalidParameter,
				Message: "the process listed has exited: another one was given its PID since"}
		}
	}
	if exited(h) {
		return nil
	}
	err = windows.TerminateProcess(h, 1)
	if err != nil && exited(h) {
		return nil
	}
	return winErr("terminate process", target, err)
}

// exited reports whether the process of handle h has ended.
func exited(h windows.Handle) bool {
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == windows.WAIT_OBJECT_0
}

// Run starts the program with CreateProcess through os/exec, which
// quotes each argument by CommandLineToArgvW's rules. Output beyond
// maxOutput per stream is dropped.
func (windowsOS) Run(ctx context.Context, c Command) (Result, error) {
	sys, err := windows.GetSystemDirectory()
	if err != nil {
		return Result{}, winErr("run", c.Path, err)
	}
	path := resolveProgram(c.Path, sys)
	if c.SearchPath && !strings.ContainsAny(c.Path, `\/:`) {
		if found, err := exec.LookPath(c.Path); err == nil {
			path = found
		}
	}
	cmd := exec.CommandContext(ctx, path, c.Args...)
	if c.Stdin != nil {
		cmd.Stdin = bytes.NewReader(c.Stdin)
	}
	stdout, stderr := &limitedBuffer{max: maxOutput}, &limitedBuffer{max: maxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if c.Stdout != nil {
		cmd.Stdout = c.Stdout
	}
	if c.Stderr != nil {
		cmd.Stderr = c.Stderr
	}
	cmd.WaitDelay = pipeDrainDelay
	err = cmd.Run()
	res := Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return res, ctxErr
	}
	var exit *exec.ExitError
	if err == nil || errors.As(err, &exit) || errors.Is(err, exec.ErrWaitDelay) {
		return res, nil
	}
	if errors.Is(err, exec.ErrNotFound) {
		// os/exec's own lookup (a name without an extension) carries no
		// Win32 code: it is the missing file CreateProcess would report.
		return res, &Error{Op: "run", Target: path, Code: ErrFileNotFound, Message: "The system cannot find the file specified."}
	}
	return res, winErr("run", path, err)
}

// RunScript runs powershell.exe from System32 with the script as
// -EncodedCommand (see powershellArgs) and input on stdin, in ASCII (see
// scriptStdin).
func (o windowsOS) RunScript(ctx context.Context, s Script, input []byte) (Result, error) {
	sys, err := windows.GetSystemDirectory()
	if err != nil {
		return Result{}, winErr("run script", s.Name(), err)
	}
	return o.Run(ctx, Command{
		Path:  sys + `\WindowsPowerShell\v1.0\powershell.exe`,
		Args:  powershellArgs(s.Source()),
		Stdin: scriptStdin(input),
	})
}

// FirewallRules runs ScriptFirewallRules: the firewall's rules are COM
// objects (INetFwPolicy2) or CIM classes, with no flat API to call from
// Go.
func (o windowsOS) FirewallRules(ctx context.Context, names []string) ([]FirewallRule, error) {
	res, err := o.RunScript(ctx, ScriptFirewallRules, scriptInput(firewallRulesInput{Names: nonNil(names)}))
	if err != nil {
		return nil, err
	}
	return firewallRules(res, names)
}

// SetFirewallRules runs ScriptFirewallSet; a missing rule fails the
// script.
func (o windowsOS) SetFirewallRules(ctx context.Context, names []string, enabled bool) error {
	res, err := o.RunScript(ctx, ScriptFirewallSet, scriptInput(firewallSetInput{Names: nonNil(names), Enabled: enabled}))
	if err != nil {
		return err
	}
	return scriptFailure(ScriptFirewallSet, res)
}
