package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// winsOps are the handlers of the wins ops (DESIGN.md §5).
var winsOps = []entry{
	handle(ops.WinsInspect, winsInspect),
	handle(ops.WinsConfigWrite, winsConfigWrite),
	handle(ops.WinsRegister, winsRegister),
	handle(ops.WinsOrphansStop, winsOrphansStop),
	handle(ops.WinsVerify, winsVerify),
	handle(ops.WinsUninstall, winsUninstall),
}

// winsLimitSet bounds every wait of the wins handlers.
type winsLimitSet struct {
	// call bounds one wins.exe client call (get-version, prc run) and
	// sc.exe: a wins whose server accepts the pipe but never answers
	// must not hang the op.
	call time.Duration
	// register bounds wins.exe srv app run --register/--unregister; wins
	// sleeps 3 s after deleting an old service and polls its stop.
	register time.Duration
	// stop bounds a service stop before its process is killed, and again
	// the wait after the kill.
	stop time.Duration
	// exit bounds the wait for a killed process to be gone.
	exit time.Duration
	// settle is how long a stopped service must stay stopped before its
	// binary is touched.
	settle time.Duration
	// poll is the interval of every wait.
	poll time.Duration
}

// winsLimits are the wins handlers' limits; tests shorten them.
var winsLimits = winsLimitSet{
	call:     30 * time.Second,
	register: 60 * time.Second,
	stop:     30 * time.Second,
	exit:     10 * time.Second,
	settle:   time.Second,
	poll:     100 * time.Millisecond,
}

// Where wins and its host state live on every node.
const (
	// winsCurrentVersionKey holds the values get-version reports.
	winsCurrentVersionKey = `SOFTWARE\Microsoft\Windows NT\CurrentVersion`
	// winsServiceKey is the service's key; the service control manager
	// sets its DeleteFlag value to 1 when the service is marked for
	// deletion.
	winsServiceKey = `SYSTEM\CurrentControlSet\Services\` + ops.WinsService
	// winsHostnameExe is the program the deep check copies.
	winsHostnameExe = `C:\Windows\System32\HOSTNAME.EXE`
)

// winsExec runs wins.exe (or another program) with args under its own
// time limit. When the limit, not ctx, ends the program, the error is a
// "timeout" failure that names the command; a non-zero exit is not an
// error.
func winsExec(ctx context.Context, w winos.OS, limit time.Duration, binary string, args ...string) (winos.Result, error) {
	res, expired, err := runBounded(ctx, w, limit, winos.Command{Path: binary, Args: args})
	switch {
	case expired:
		return res, Fail(ops.KindTimeout, "%s did not finish within %s and was stopped: it hangs", winsCommandLine(binary, args), limit)
	case err != nil:
		return res, fmt.Errorf("run %s: %w", winsCommandLine(binary, args), err)
	}
	return res, nil
}

// winsCommandLine names a command in messages: the program's file name
// and its arguments.
func winsCommandLine(binary string, args []string) string {
	name := winpath.Base(binary)
	return strings.Join(append([]string{name}, args...), " ")
}

// winsOutput is everything a program printed, stdout then stderr, as one
// trimmed text (wins logs and reports errors on stderr).
func winsOutput(res winos.Result) string {
	out := strings.TrimSpace(string(res.Stdout))
	if e := strings.TrimSpace(string(res.Stderr)); e != "" {
		if out != "" {
			out += "\n"
		}
		out += e
	}
	return out
}

// winsFileExists reports whether path is an existing file; errors other
// than "not found" are returned.
func winsFileExists(w winos.OS, path string) (bool, error) {
	fi, err := w.Stat(path)
	switch {
	case err == nil:
		return !fi.IsDir, nil
	case winsNotFound(err):
		return false, nil
	default:
		return false, err
	}
}

// winsNotFound reports whether err says a file, registry value or service
// does not exist.
func winsNotFound(err error) bool {
	switch winos.Code(err) {
	case winos.ErrFileNotFound, winos.ErrPathNotFound, winos.ErrServiceDoesNotExist:
		return true
	}
	return false
}

// winsServiceInfo describes the rancher-wins service as the ops report it.
func winsServiceInfo(w winos.OS) (ops.ServiceInfo, error) {
	info := ops.ServiceInfo{Name: ops.WinsService, DependsOn: []string{}, Dependents: []string{}}
	svc, err := w.Service(ops.WinsService)
	if winsNotFound(err) {
		return info, nil
	}
	if err != nil {
		return info, fmt.Errorf("read service %s: %w", ops.WinsService, err)
	}
	dependents, err := w.Dependents(ops.WinsService)
	if err != nil && !winsNotFound(err) {
		return info, fmt.Errorf("read the dependents of service %s: %w", ops.WinsService, err)
	}
	info.Name, info.Exists = svc.Name, true
	info.Status, info.StartType, info.PID, info.BinaryPath = string(svc.Status), svc.StartType, svc.PID, svc.CommandLine
	info.DependsOn = append(info.DependsOn, svc.Dependencies...)
	info.Dependents = append(info.Dependents, dependents...)
	return info, nil
}

// winsMarkedForDeletion reports whether the rancher-wins service is
// marked for deletion: it is still listed (until its process exits and
// the last handle to it closes) but can be neither started nor
// registered again.
func winsMarkedForDeletion(w winos.OS) (bool, error) {
	v, err := w.RegistryValue(winsServiceKey, "DeleteFlag")
	if winsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the DeleteFlag of service %s: %w", ops.WinsService, err)
	}
	return v.Number == 1, nil
}

// winsRegistered reports whether the rancher-wins service exists and is
// not marked for deletion.
func winsRegistered(w winos.OS) (bool, error) {
	_, err := w.Service(ops.WinsService)
	if winsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read service %s: %w", ops.WinsService, err)
	}
	marked, err := winsMarkedForDeletion(w)
	return !marked, err
}
