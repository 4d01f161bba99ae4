package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// winsVerify checks the wins bridge as a container would use it: the
// service, both pipes, a get-version round trip through the pipe next to
// the same values read straight from the host registry and, when asked,
// a whitelisted copy of hostname.exe run on the host through the pipe
// (then cleaned up). A check that fails is reported in the response; the
// op itself fails only when the node cannot be read or its time is up.
func winsVerify(ctx context.Context, w winos.OS, req ops.WinsVerifyRequest) (ops.WinsVerifyResponse, error) {
	if req.Deep && req.SmokePath == "" {
		return ops.WinsVerifyResponse{}, Fail(ops.KindBadRequest, "the deep check needs a whitelisted smoke path")
	}
	svc, err := winsServiceInfo(w)
	if err != nil {
		return ops.WinsVerifyResponse{}, err
	}
	resp := ops.WinsVerifyResponse{Service: svc}
	if resp.Pipes, err = winsPipes(w); err != nil {
		return ops.WinsVerifyResponse{}, err
	}
	if resp.Registry, err = winsRegistryVersion(w); err != nil {
		return ops.WinsVerifyResponse{}, err
	}
	resp.GetVersion, resp.GetVersionError = winsGetVersion(ctx, w, req.Binary)
	if req.Deep {
		resp.Deep = winsDeep(ctx, w, req)
	}
	// A check cut short by the op's own deadline says nothing about wins.
	if err := ctx.Err(); err != nil {
		return ops.WinsVerifyResponse{}, fmt.Errorf("verify wins: %w", err)
	}
	return resp, nil
}

// winsPipes reports which of wins' two pipes exist (pipe names compare
// without regard to case).
func winsPipes(w winos.OS) (map[string]bool, error) {
	return pipesExist(w, ops.WinsPipe, ops.WinsProxyPipe)
}

// winsRegistryVersion reads ops.WinsVersionKeys from the host registry:
// numbers for DWORD and QWORD values, strings otherwise, nil when absent.
func winsRegistryVersion(w winos.OS) (map[string]any, error) {
	out := make(map[string]any, len(ops.WinsVersionKeys))
	for _, k := range ops.WinsVersionKeys {
		v, err := w.RegistryValue(winsCurrentVersionKey, k)
		switch {
		case winsNotFound(err):
			out[k] = nil
		case err != nil:
			return nil, fmt.Errorf(`read HKLM\%s\%s: %w`, winsCurrentVersionKey, k, err)
		case v.Kind == winos.RegDWord || v.Kind == winos.RegQWord:
			out[k] = v.Number
		case v.Kind == winos.RegMultiString:
			out[k] = strings.Join(v.Strings, "\n")
		default:
			out[k] = v.String
		}
	}
	return out, nil
}

// winsGetVersion runs wins.exe cli hst get-version, a round trip through
// \\.\pipe\rancher_wins, and returns ops.WinsVersionKeys from what it
// printed, or why that failed. Only stdout is parsed: wins logs on
// stderr.
func winsGetVersion(ctx context.Context, w winos.OS, binary string) (map[string]any, string) {
	got := map[string]any{}
	exists, err := winsFileExists(w, binary)
	if err != nil {
		return got, fmt.Sprintf("look for %s: %v", binary, err)
	}
	if !exists {
		return got, binary + " does not exist"
	}
	args := []string{"cli", "hst", "get-version"}
	res, err := winsExec(ctx, w, winsLimits.call, binary, args...)
	if err != nil {
		_, msg := failureOf(err)
		return got, msg
	}
	if res.ExitCode != 0 {
		return got, fmt.Sprintf("%s exited %d: %s", winsCommandLine(binary, args), res.ExitCode, winsOutput(res))
	}
	var parsed map[string]any
	stdout := bytes.TrimSpace(res.Stdout)
	dec := json.NewDecoder(bytes.NewReader(stdout))
	// Numbers stay as wins printed them (a UBR or build number must not
	// come back as 1.7763e+04).
	dec.UseNumber()
	if !bytes.HasPrefix(stdout, []byte("{")) || dec.Decode(&parsed) != nil {
		return got, fmt.Sprintf("%s printed no JSON: %s", winsCommandLine(binary, args), winsOutput(res))
	}
	for _, k := range ops.WinsVersionKeys {
		got[k] = parsed[k]
	}
	return got, ""
}

// winsDeep copies hostname.exe to the whitelisted smoke path, runs it on
// the host through the pipe (wins renames it rancher-wins-<name> and
// starts it), compares what it printed with the host's name, and cleans
// up after it.
func winsDeep(ctx context.Context, w winos.OS, req ops.WinsVerifyRequest) *ops.WinsDeepResult {
	deep := &ops.WinsDeepResult{Leftovers: []string{}}
	dir, leaf := winpath.Dir(req.SmokePath), winpath.Base(req.SmokePath)
	renamed := winpath.Join(dir, ops.WinsProcessPrefix+leaf)
	defer winsDeepCleanup(ctx, w, deep, req.SmokePath, renamed)
	host, err := w.Hostname()
	if err != nil {
		deep.Error = fmt.Sprintf("read the host name: %v", err)
		return deep
	}
	// The DNS host name as configured, which hostname.exe prints; not the
	// NetBIOS name (upper case, cut to 15 characters).
	deep.Expected = host
	if err := winsCopy(w, winsHostnameExe, req.SmokePath); err != nil {
		deep.Error = err.Error()
		return deep
	}
	args := []string{"cli", "prc", "run", "--path", req.SmokePath}
	res, err := winsExec(ctx, w, winsLimits.call, req.Binary, args...)
	switch {
	case err != nil:
		_, deep.Error = failureOf(err)
	case res.ExitCode != 0:
		deep.Output = winsOutput(res)
		deep.Error = fmt.Sprintf("%s exited %d", winsCommandLine(req.Binary, args[:3]), res.ExitCode)
	default:
		deep.Output = strings.TrimSpace(string(res.Stdout))
		if winsPrinted(res.Stdout, host) {
			deep.OK = true
		} else {
			deep.Error = fmt.Sprintf("the process ran but did not print the host name %q", host)
		}
	}
	return deep
}

// winsPrinted reports whether one line of out is name: host names compare
// without regard to case, and hostname.exe ends its line with CRLF.
func winsPrinted(out []byte, name string) bool {
	for _, line := range strings.Split(string(out), "\n") {
		if strings.EqualFold(strings.TrimSpace(line), strings.TrimSpace(name)) {
			return true
		}
	}
	return false
}

// winsCopy copies a (small) file to a new file of swdt's own.
func winsCopy(w winos.OS, from, to string) error {
	content, exists, err := winsReadFile(w, from)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("copy %s to %s: %s does not exist", from, to, from)
	}
	if err := writeOwnFile(w, to, content); err != nil {
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	return nil
}

// winsDeepCleanup stops the smoke's own host process and removes its
// files, recording what stays in deep.Leftovers. Only the smoke's own
// process is stopped: other rancher-wins-* processes are workloads wins
// runs for containers (kube-proxy, CNI agents). It runs even when the
// op's time is up, within its own bound.
func winsDeepCleanup(ctx context.Context, w winos.OS, deep *ops.WinsDeepResult, smoke, renamed string) {
	ctx = context.WithoutCancel(ctx)
	leaf := winpath.Base(renamed)
	var mine []ops.Process
	orphans, err := winsOrphans(w)
	if err != nil {
		deep.Leftovers = append(deep.Leftovers, "unknown processes: "+err.Error())
	}
	for _, p := range orphans {
		if strings.EqualFold(p.Name, leaf) {
			mine = append(mine, p)
		}
	}
	left, err := winsKill(ctx, w, mine)
	if err != nil {
		deep.Leftovers = append(deep.Leftovers, err.Error())
	}
	for _, f := range []string{renamed, smoke} {
		if err := w.Remove(f); err != nil && !winsNotFound(err) {
			deep.Leftovers = append(deep.Leftovers, f)
		}
	}
	for _, p := range left {
		deep.Leftovers = append(deep.Leftovers, "process "+strconv.Itoa(p.PID)+" "+p.Name)
	}
}
