package simnode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

// The hot-swap ops (pkg/pwsh/ops/provision.go). Each handler follows its
// .ps1 step by step, with the same results and the same failure points, so
// that what pkg/provision sees from simnode is what it would see from
// Windows.

// healthPollInterval is Test-SwdtHealth's Start-Sleep between rounds.
const healthPollInterval = 250 * time.Millisecond

// recoverStartTimeout is swap-recover's WaitForStatus timeout.
const recoverStartTimeout = 60 * time.Second

func opProvisionInspect(_ context.Context, n *Node, req ops.ProvisionInspectRequest) (ops.ProvisionInspectResponse, error) {
	resp := ops.ProvisionInspectResponse{Files: []ops.FileInfo{}, Services: []ops.ServiceInfo{}}
	var queue []string
	for _, t := range req.Targets {
		info, err := fileFacts(n, t.Destination, true, t.Known)
		if err != nil {
			return resp, err
		}
		resp.Files = append(resp.Files, info)
		queue = append(queue, t.Service)
	}
	seen := map[string]bool{}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[strings.ToLower(name)] {
			continue
		}
		seen[strings.ToLower(name)] = true
		svc, err := n.Service(name)
		if err != nil {
			resp.Services = append(resp.Services, ops.ServiceInfo{Name: name, DependsOn: []string{}, Dependents: []string{}})
			continue
		}
		dependents := nonNil(n.Dependents(svc.Name))
		queue = append(queue, dependents...)
		resp.Services = append(resp.Services, ops.ServiceInfo{
			Name:       svc.Name,
			Exists:     true,
			Status:     string(svc.Status),
			StartType:  string(svc.StartType),
			PID:        svc.PID,
			BinaryPath: servicePathName(svc),
			DependsOn:  nonNil(svc.Dependencies),
			Dependents: dependents,
		})
	}
	return resp, nil
}

// fileFacts is Get-SwdtFileFacts (withVersion) or file-hash's facts: a
// missing path, or a directory (Test-Path -PathType Leaf), is reported as
// not existing.
func fileFacts(n *Node, p string, withVersion bool, known *ops.FileInfo) (ops.FileInfo, error) {
	facts := ops.FileInfo{Path: p}
	if !isFile(n, p) {
		return facts, nil
	}
	st, err := n.Stat(p)
	if err != nil {
		return facts, err
	}
	facts.Exists, facts.Size, facts.ModTicks = true, st.Size, DotNetTicks(st.ModTime)
	if known != nil && known.SHA256 != "" && known.Size == facts.Size && known.ModTicks == facts.ModTicks {
		facts.SHA256, facts.Cached = known.SHA256, true
	} else if facts.SHA256, _, err = n.Hash(p); err != nil {
		return facts, err
	}
	if withVersion {
		if facts.Version, err = n.FileVersion(p); err != nil {
			return facts, err
		}
	}
	return facts, nil
}

// DotNetTicks is t as .NET's DateTime.Ticks in UTC: 100 ns units since
// 0001-01-01, the form LastWriteTimeUtc.Ticks has on a real node.
func DotNetTicks(t time.Time) int64 {
	const unixEpochTicks = 621355968000000000
	return unixEpochTicks + t.UTC().UnixNano()/100
}

func isFile(n *Node, p string) bool {
	fi, err := n.Stat(p)
	return err == nil && !fi.IsDir
}

// servicePathName is Win32_Service.PathName: the quoted executable and
// its arguments.
func servicePathName(svc Service) string {
	s := `"` + svc.BinaryPath + `"`
	if len(svc.Args) > 0 {
		s += " " + strings.Join(svc.Args, " ")
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func opFileHash(_ context.Context, n *Node, req ops.FileHashRequest) (ops.FileHashResponse, error) {
	resp := ops.FileHashResponse{Files: []ops.FileInfo{}}
	for _, p := range req.Paths {
		info, err := fileFacts(n, p, false, nil)
		if err != nil {
			return resp, err
		}
		resp.Files = append(resp.Files, info)
	}
	return resp, nil
}

func opFilesRemove(_ context.Context, n *Node, req ops.FilesRemoveRequest) (ops.FilesRemoveResponse, error) {
	resp := ops.FilesRemoveResponse{Removed: []string{}}
	for _, p := range req.Paths {
		if !isFile(n, p) {
			continue
		}
		if err := n.Remove(p); err != nil {
			return resp, err
		}
		resp.Removed = append(resp.Removed, p)
	}
	return resp, nil
}

// swapRun is one service-swap op in progress.
type swapRun struct {
	n       *Node
	req     ops.ServiceSwapRequest
	started time.Time
	// events counts each service's event-log lines when the op started,
	// so that a failure reports only the lines it caused (Get-WinEvent
	// -StartTime).
	events map[string]int
	// runningAt is when each service last reached Running.
	runningAt map[string]time.Duration
}

func opServiceSwap(ctx context.Context, n *Node, req ops.ServiceSwapRequest) (ops.ServiceSwapResponse, error) {
	r := &swapRun{n: n, req: req, started: time.Now(), events: map[string]int{}, runningAt: map[string]time.Duration{}}
	for _, svc := range n.Services() {
		r.events[strings.ToLower(svc.Name)] = len(svc.EventLog)
	}
	resp := ops.ServiceSwapResponse{Items: []ops.SwapItemResult{}, Killed: []string{}, NotStarted: []ops.ServiceProblem{}}

	// Before anything stops: a staged file must be there, and an old
	// backup is cleared so that the renames cannot fail on it.
	results := make([]*ops.SwapItemResult, len(req.Items))
	byService := map[string]int{}
	for i, it := range req.Items {
		if !isFile(n, it.Staged) {
			return resp, Fail("not-found", "staged file %s is missing; nothing was stopped", it.Staged)
		}
		if n.Exists(it.Backup) {
			if err := n.Remove(it.Backup); err != nil {
				return resp, err
			}
		}
		results[i] = &ops.SwapItemResult{Service: it.Service, Destination: it.Destination, Result: "pending"}
		byService[strings.ToLower(it.Service)] = i
	}

	pids := map[string]int{}
	for _, svc := range n.Services() {
		pids[strings.ToLower(svc.Name)] = svc.PID
	}
	stoppedAt := map[string]time.Duration{}
	timeout := time.Duration(req.StopTimeoutMs) * time.Millisecond
	for _, name := range req.StopOrder {
		stoppedAt[strings.ToLower(name)] = time.Since(r.started)
		killed, err := r.stop(ctx, name, pids[strings.ToLower(name)], timeout)
		if err != nil {
			return resp, err
		}
		if killed {
			resp.Killed = append(resp.Killed, name)
		}
	}

	for i, it := range req.Items {
		r.rename(it, results[i])
	}

	item := func(name string) (ops.SwapItem, *ops.SwapItemResult, bool) {
		i, ok := byService[strings.ToLower(name)]
		if !ok {
			return ops.SwapItem{}, nil, false
		}
		return req.Items[i], results[i], true
	}
	failures, err := r.startAll(ctx, req.StartOrder)
	if err != nil {
		return resp, err
	}
	for _, name := range req.StartOrder {
		it, res, ok := item(name)
		if _, failed := failures[name]; failed || !ok || res.Result != ops.SwapResultSwapped {
			continue
		}
		failure, err := r.health(ctx, it.HealthChecks)
		if err != nil {
			return resp, err
		}
		if failure != "" {
			failures[name] = "health check failed: " + failure
		}
	}

	var rollback []string
	for _, name := range req.StartOrder {
		it, res, ok := item(name)
		if _, failed := failures[name]; failed && ok && res.Result == ops.SwapResultSwapped && n.Exists(it.Backup) {
			rollback = append(rollback, name)
		}
	}
	if len(rollback) > 0 {
		for _, name := range rollback {
			_, res, _ := item(name)
			svc, err := n.Service(name)
			if err != nil {
				return resp, err
			}
			res.ExitCode, res.Events, res.Error = svc.LastExitCode, r.newEvents(svc), failures[name]
		}
		timeout := time.Duration(req.StopTimeoutMs) * time.Millisecond
		for i := len(req.StartOrder) - 1; i >= 0; i-- {
			name := req.StartOrder[i]
			svc, err := n.Service(name)
			if err != nil {
				return resp, err
			}
			if _, err := r.stop(ctx, name, svc.PID, timeout); err != nil {
				return resp, err
			}
		}
		for _, name := range rollback {
			it, res, _ := item(name)
			failed := it.Destination + ".swdt-failed"
			if n.Exists(failed) {
				if err := n.Remove(failed); err != nil {
					return resp, err
				}
			}
			if err := n.Rename(it.Destination, failed, false); err != nil {
				return resp, err
			}
			if err := n.Rename(it.Backup, it.Destination, false); err != nil {
				return resp, err
			}
			res.Result = ops.SwapResultRolledBack
			res.Error += "; the new binary was kept as " + failed
		}
		if failures, err = r.startAll(ctx, req.StartOrder); err != nil {
			return resp, err
		}
		for _, name := range rollback {
			if again, failed := failures[name]; failed {
				_, res, _ := item(name)
				res.Result = ops.SwapResultFailed
				res.Error += "; the old binary was restored but did not start either: " + again
			}
		}
	}

	for _, name := range req.StartOrder {
		_, res, ok := item(name)
		if failure, failed := failures[name]; failed {
			resp.NotStarted = append(resp.NotStarted, ops.ServiceProblem{Service: name, Error: failure})
			switch {
			case ok && res.Result == ops.SwapResultSwapped:
				res.Result, res.Error = ops.SwapResultFailed, failure
			case ok && res.Result == ops.SwapResultFailed && !slices.Contains(rollback, name):
				res.Error = joinNonEmpty(res.Error, failure)
			}
		}
		at, stopped := stoppedAt[strings.ToLower(name)]
		up, running := r.runningAt[name]
		if ok && stopped && running {
			res.DowntimeMs = (up - at).Milliseconds()
		}
	}
	for _, res := range results {
		resp.Items = append(resp.Items, *res)
	}
	return resp, nil
}

// stop is Stop-SwdtService: stop, wait for Stopped, kill the process past
// the timeout, and wait for the process to exit. It reports whether the
// process had to be killed. Errors end the op, as uncaught exceptions do.
func (r *swapRun) stop(ctx context.Context, name string, pid int, timeout time.Duration) (bool, error) {
	n := r.n
	svc, err := n.Service(name)
	if err != nil {
		return false, err
	}
	killed := false
	// A StartPending service cannot take a stop control: it gets the stop
	// timeout to finish starting first.
	deadline := time.Now().Add(timeout)
	for svc.Status == StatusStartPending && time.Now().Before(deadline) {
		if err := n.Sleep(ctx, 100*time.Millisecond); err != nil {
			return false, err
		}
		if svc, err = n.Service(name); err != nil {
			return false, err
		}
	}
	if svc.Status != StatusStopped {
		if svc.Status != StatusStopPending {
			// try { $sc.Stop() } catch {}: a service that still refuses
			// the control is killed past the timeout below.
			_ = n.StopService(name)
		}
		if _, err := n.WaitService(ctx, name, StatusStopped, timeout); err != nil {
			if !isTimeout(err) {
				return false, err
			}
			if pid > 0 && n.KillProcess(pid) == nil {
				killed = true
			}
			if _, err := n.WaitService(ctx, name, StatusStopped, timeout); err != nil {
				return killed, err
			}
		}
	}
	if pid > 0 && processRunning(n, pid) {
		if err := n.KillProcess(pid); err != nil {
			return killed, err
		}
		killed = true
		if processRunning(n, pid) {
			return killed, Fail("timeout", "process %d of service %s did not exit after being killed", pid, name)
		}
	}
	return killed, nil
}

func isTimeout(err error) bool {
	var f *OpFailure
	return errors.As(err, &f) && f.Kind == "timeout"
}

func processRunning(n *Node, pid int) bool {
	return slices.ContainsFunc(n.Processes(), func(p Process) bool { return p.PID == pid })
}

// rename keeps the old binary as the backup and moves the staged file into
// place; a failure puts the old binary back.
func (r *swapRun) rename(it ops.SwapItem, res *ops.SwapItemResult) {
	n := r.n
	hadOld := isFile(n, it.Destination)
	err := n.MkdirAll(parentDir(it.Destination))
	if err == nil && hadOld {
		err = n.Rename(it.Destination, it.Backup, false)
	}
	if err == nil {
		err = n.Rename(it.Staged, it.Destination, false)
	}
	if err == nil {
		res.Result = ops.SwapResultSwapped
		return
	}
	res.Result = ops.SwapResultFailed
	res.Error = "could not rename the staged binary into place: " + err.Error()
	if hadOld && !n.Exists(it.Destination) && n.Exists(it.Backup) {
		_ = n.Rename(it.Backup, it.Destination, false)
	}
}

// parentDir is Split-Path -Parent of a Windows path.
func parentDir(p string) string {
	p = strings.ReplaceAll(p, "/", `\`)
	if i := strings.LastIndex(p, `\`); i > 0 {
		if i == 2 && p[1] == ':' {
			return p[:3]
		}
		return p[:i]
	}
	return p
}

// startOne is Start-SwdtService: "" when name reached Running, else why
// not. Only a lost session (ctx) is an error.
func (r *swapRun) startOne(ctx context.Context, name string) (string, error) {
	n := r.n
	timeout := time.Duration(r.req.StartTimeoutMs) * time.Millisecond
	svc, err := n.Service(name)
	if err == nil && svc.Status != StatusRunning {
		err = n.StartService(name)
	}
	if err == nil {
		_, err = n.WaitService(ctx, name, StatusRunning, timeout)
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if err != nil {
		status := "Stopped"
		if svc, serr := n.Service(name); serr == nil {
			status = string(svc.Status)
		}
		return fmt.Sprintf("service did not reach Running within %d ms (status %s): %s", r.req.StartTimeoutMs, status, err), nil
	}
	return "", nil
}

// startAll is Start-SwdtServices: start names in order, settle once for
// all of them, then check each is still Running. It returns name -> why
// not for the ones that are not, and records when each reached Running.
func (r *swapRun) startAll(ctx context.Context, names []string) (map[string]string, error) {
	failures := map[string]string{}
	for _, name := range names {
		failure, err := r.startOne(ctx, name)
		if err != nil {
			return nil, err
		}
		if failure != "" {
			failures[name] = failure
			delete(r.runningAt, name)
			continue
		}
		r.runningAt[name] = time.Since(r.started)
	}
	if len(names) == 0 {
		return failures, nil
	}
	if err := r.n.Sleep(ctx, time.Duration(r.req.SettleMs)*time.Millisecond); err != nil {
		return nil, err
	}
	for _, name := range names {
		if _, failed := failures[name]; failed {
			continue
		}
		if svc, err := r.n.Service(name); err != nil || svc.Status != StatusRunning {
			status := "Stopped"
			if err == nil {
				status = string(svc.Status)
			}
			failures[name] = fmt.Sprintf("service stopped again within %d ms of starting (status %s)", r.req.SettleMs, status)
		}
	}
	return failures, nil
}

// health is Test-SwdtHealth: every check, retried until all pass or the
// health timeout runs out.
func (r *swapRun) health(ctx context.Context, checks []ops.HealthCheckSpec) (string, error) {
	deadline := time.Now().Add(time.Duration(r.req.HealthTimeoutMs) * time.Millisecond)
	for {
		failure := ""
		for _, c := range checks {
			if failure = r.check(ctx, c); failure != "" {
				break
			}
		}
		if failure == "" || !time.Now().Before(deadline) {
			return failure, nil
		}
		if err := r.n.Sleep(ctx, healthPollInterval); err != nil {
			return "", err
		}
	}
}

// check is Test-SwdtHealthCheck. simnode runs nothing, so a command check
// passes when its executable exists on the simulated drive (an absolute
// path, or a bare name found in C:\Windows\System32 or C:\Windows as on
// PATH) and fails as Process.Start would when it does not. A wins command
// line (wins.exe cli ...) is answered by the simulated wins instead.
func (r *swapRun) check(ctx context.Context, c ops.HealthCheckSpec) string {
	n := r.n
	switch {
	case c.NamedPipe != "":
		if n.PipeExists(c.NamedPipe) {
			return ""
		}
		return `named pipe \\.\pipe\` + c.NamedPipe + " does not exist"
	case c.TCPPort != 0:
		if n.PortListening(int(c.TCPPort)) {
			return ""
		}
		return fmt.Sprintf("nothing listens on TCP port %d", c.TCPPort)
	case len(c.Command) > 0:
		exe := c.Command[0]
		if code, out, ok := n.WinsCommand(ctx, c.Command); ok {
			if code == 0 {
				return ""
			}
			return fmt.Sprintf("command %s exited %d: %s", exe, code, out)
		}
		candidates := []string{exe}
		if !strings.ContainsAny(exe, `\/:`) {
			candidates = []string{`C:\Windows\System32\` + exe, `C:\Windows\` + exe}
		}
		for _, p := range candidates {
			if isFile(n, p) {
				return ""
			}
		}
		return "command " + exe + " could not be started: The system cannot find the file specified"
	}
	return "empty health check"
}

// newEvents are the service's event-log lines written since the op
// started, newest first, at most five (Get-WinEvent ... | Select -First 5).
// simnode's event log has no timestamps, so the lines carry none.
func (r *swapRun) newEvents(svc Service) []string {
	lines := svc.EventLog[min(r.events[strings.ToLower(svc.Name)], len(svc.EventLog)):]
	out := []string{}
	for i := len(lines) - 1; i >= 0 && len(out) < 5; i-- {
		out = append(out, lines[i])
	}
	return out
}

func joinNonEmpty(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

func opSwapRecover(ctx context.Context, n *Node, req ops.SwapRecoverRequest) (ops.SwapRecoverResponse, error) {
	resp := ops.SwapRecoverResponse{Restored: []string{}, Started: []string{}, NotStarted: []ops.ServiceProblem{}}
	for _, it := range req.Items {
		if !isFile(n, it.Destination) && isFile(n, it.Backup) {
			if err := n.Rename(it.Backup, it.Destination, false); err != nil {
				return resp, err
			}
			resp.Restored = append(resp.Restored, it.Destination)
		}
		if isFile(n, it.Staged) {
			if err := n.Remove(it.Staged); err != nil {
				return resp, err
			}
		}
	}
	for _, name := range req.Start {
		svc, err := n.Service(name)
		if err == nil && svc.Status == StatusRunning {
			continue
		}
		if err == nil && svc.Status != StatusStartPending {
			err = n.StartService(name)
		}
		if err == nil {
			_, err = n.WaitService(ctx, name, StatusRunning, recoverStartTimeout)
		}
		if ctx.Err() != nil {
			return resp, ctx.Err()
		}
		if err != nil {
			resp.NotStarted = append(resp.NotStarted, ops.ServiceProblem{Service: name, Error: err.Error()})
			continue
		}
		resp.Started = append(resp.Started, name)
	}
	return resp, nil
}
