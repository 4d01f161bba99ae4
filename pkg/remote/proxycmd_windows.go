//go:build windows

package remote

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// shellCommand runs command with cmd /c, as OpenSSH for Windows does. The
// command line is passed as written: cmd.exe does not parse it the way Go
// quotes arguments.
func shellCommand(command string) *exec.Cmd {
	comspec := os.Getenv("ComSpec")
	if comspec == "" {
		comspec = "cmd.exe"
	}
	cmd := exec.Command(comspec)
	cmd.SysProcAttr = &syscall.SysProcAttr{CmdLine: `"` + comspec + `" /d /s /c "` + command + `"`}
	return cmd
}

// quoteToken makes s one word for cmd.exe: as it is when it has nothing
// cmd.exe would act on, else in double quotes (the names swdt checks
// hold no double quote), where & | < > ^ ( ) lose their meaning; a
// %NAME% pair is still expanded, as everywhere in a cmd /c line.
func quoteToken(s string) string {
	if s != "" && strings.Trim(s, plainToken) == "" {
		return s
	}
	return `"` + s + `"`
}

// startKillable starts cmd in a job object that ends every process in it
// when its handle is closed: kill ends the command and what it started.
// Without a job object, kill ends the command alone.
func startKillable(cmd *exec.Cmd) (kill func(), err error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	job, err := killOnCloseJob(cmd.Process.Pid)
	if err != nil {
		return func() { _ = cmd.Process.Kill() }, nil
	}
	return func() {
		windows.CloseHandle(job)
		_ = cmd.Process.Kill()
	}, nil
}

func killOnCloseJob(pid int) (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	defer windows.CloseHandle(p)
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
}

// endedByItself cannot tell: a process ended by kill exits with status 1
// like one that failed, so only an end seen before kill counts.
func endedByItself(*os.ProcessState) bool { return false }
