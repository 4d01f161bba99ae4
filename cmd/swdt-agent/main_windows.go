package main

import (
	"context"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/winos"
)

func run(ctx context.Context, args []string) int {
	if err := killChildrenWithAgent(); err != nil {
		// Not fatal: the agent still bounds every program it starts.
		fmt.Fprintf(os.Stderr, "swdt-agent: programs it starts may outlive it: %v\n", err)
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	self := agent.Self{Path: exe}
	return agent.Run(ctx, winos.New(), self, args, os.Stdin, os.Stdout, os.Stderr)
}

// killChildrenWithAgent puts the agent in a job object that ends every
// process in it when its last handle closes: when the agent ends (an op
// done, or the agent killed), the programs it started (swdt exec's,
// choco.exe, wins.exe...) end with it instead of running on unbounded.
// Jobs nest since Windows 8 / Server 2012, so this works inside the job
// sshd runs the session in. The job allows breakaway, as sshd's own does:
// installers (Chocolatey packages, MSI custom actions) start helpers with
// CREATE_BREAKAWAY_FROM_JOB and fail when the job forbids it.
func killChildrenWithAgent() error {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return fmt.Errorf("create job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE | windows.JOB_OBJECT_LIMIT_BREAKAWAY_OK
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("set job object limits: %w", err)
	}
	if err := windows.AssignProcessToJobObject(job, windows.CurrentProcess()); err != nil {
		windows.CloseHandle(job)
		return fmt.Errorf("join job object: %w", err)
	}
	// The handle stays open for the agent's life: the system closes it
	// when the agent exits, however it exits.
	return nil
}
