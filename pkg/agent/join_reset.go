package agent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// Pod sandboxes outlive the services of a join: each is a process of
// containerd's shim (containerd-shim-runhcs-v1.exe), which containerd
// starts and which keeps running when containerd stops, so that
// containers survive containerd's restarts. Windows refuses to delete a
// running executable, so join-reset ends, once the services are gone,
// every process that runs one of the files it removes, and waits for it
// to exit. Processes that run other files (a shim the join did not
// install) are left alone. A process that cannot be ended is reported
// with its file, which is kept, and the rest is removed.

// joinEndRunners ends the processes whose image is one of files and
// waits (up to joinExitLimit) until they have exited. ended are those
// that did; inUse those that could not be ended or outlived the wait.
func joinEndRunners(ctx context.Context, w winos.OS, files []string) (ended, inUse []ops.JoinProcess, err error) {
	procs, err := w.Processes()
	if err != nil {
		return nil, nil, fmt.Errorf("list the processes that may run the join's binaries: %w", err)
	}
	var killed []winos.Process
	for _, pr := range procs {
		if !slices.ContainsFunc(files, func(f string) bool { return pr.Path != "" && strings.EqualFold(pr.Path, f) }) {
			continue
		}
		// A process that exited meanwhile, or whose PID another took
		// since the listing, is not touched (ErrInvalidParameter): gone.
		if err := w.KillProcess(pr.PID, pr.Started); err != nil && winos.Code(err) != winos.ErrInvalidParameter {
			jp := joinProcess(pr)
			jp.Error = fmt.Sprintf("could not end process %d: %v", pr.PID, err)
			inUse = append(inUse, jp)
			continue
		}
		killed = append(killed, pr)
	}
	if len(killed) == 0 {
		return nil, inUse, nil
	}
	// TerminateProcess returns before the process has exited, and its
	// image stays locked until it has.
	var running []winos.Process
	if _, err := poll(ctx, joinExitLimit, 200*time.Millisecond, func() (bool, error) {
		running, err = joinStillRunning(w, killed)
		return len(running) == 0, err
	}); err != nil {
		return nil, nil, err
	}
	for _, pr := range killed {
		jp := joinProcess(pr)
		if slices.ContainsFunc(running, func(r winos.Process) bool { return r.PID == pr.PID }) {
			jp.Error = fmt.Sprintf("process %d still ran %d ms after it was ended", pr.PID, joinExitLimit.Milliseconds())
			inUse = append(inUse, jp)
			continue
		}
		ended = append(ended, jp)
	}
	return ended, inUse, nil
}

// joinProcess is how the response names a process that runs a join's
// file.
func joinProcess(pr winos.Process) ops.JoinProcess {
	return ops.JoinProcess{Path: pr.Path, Name: procName(pr), PID: pr.PID}
}

// joinStillRunning lists the processes of procs that still run (Windows
// reuses process IDs: a later process with the PID, or another program,
// does not count).
func joinStillRunning(w winos.OS, procs []winos.Process) ([]winos.Process, error) {
	now, err := w.Processes()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var out []winos.Process
	for _, pr := range procs {
		if slices.ContainsFunc(now, func(n winos.Process) bool {
			return n.PID == pr.PID && n.Started.Equal(pr.Started) && strings.EqualFold(procName(n), procName(pr))
		}) {
			out = append(out, pr)
		}
	}
	return out, nil
}

// joinInUse reports whether a process of inUse still runs file f.
func joinInUse(inUse []ops.JoinProcess, f string) bool {
	return slices.ContainsFunc(inUse, func(jp ops.JoinProcess) bool { return strings.EqualFold(jp.Path, f) })
}
