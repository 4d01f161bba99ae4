package agent

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// restartOps are the handlers of swdt restart and swdt reboot.
var restartOps = []entry{
	handle(ops.ServiceRestart, serviceRestart),
	handle(ops.NodeReboot, nodeReboot),
	handle(ops.ServiceStatus, serviceStatus),
}

// serviceRestart is a swap without binaries: the swap op stops the
// services in dependency order (killing one that hangs, its failure
// actions put back afterwards), starts every service it stopped and runs
// the health checks, with its journal, so that an interrupted restart is
// finished by the next swdt run like an interrupted swap.
func serviceRestart(ctx context.Context, w winos.OS, req ops.ServiceRestartRequest) (ops.ServiceRestartResponse, error) {
	resp := ops.ServiceRestartResponse{Services: []ops.RestartedService{}}
	if len(req.Services) == 0 {
		return resp, Fail(ops.KindBadRequest, "no service to restart")
	}
	deps := map[svcKey][]string{}
	for _, name := range req.Services {
		svc, err := w.Service(name)
		if winos.Code(err) == winos.ErrServiceDoesNotExist {
			return resp, failBeforeStop(ops.KindNotFound, "service %s does not exist on the node", name)
		} else if err != nil {
			return resp, beforeStop(fmt.Errorf("service %s: %w", name, err))
		}
		resp.Services = append(resp.Services, ops.RestartedService{Service: svc.Name, PIDBefore: svc.PID})
		deps[keyOf(name)] = svc.Dependencies
	}
	swap, err := serviceSwap(ctx, w, ops.ServiceSwapRequest{
		StopOrder:       req.Services,
		StartOrder:      startOrder(req.Services, deps),
		ServiceChecks:   req.Checks,
		StopTimeoutMs:   req.StopTimeoutMs,
		StartTimeoutMs:  req.StartTimeoutMs,
		SettleMs:        req.SettleMs,
		HealthTimeoutMs: req.HealthTimeoutMs,
	}, nil)
	resp.Killed, resp.NotStarted, resp.AlsoStopped, resp.Downtime = swap.Killed, swap.NotStarted, swap.AlsoStopped, swap.Downtime
	for i := range resp.Services {
		if svc, serr := w.Service(resp.Services[i].Service); serr == nil {
			resp.Services[i].PIDAfter, resp.Services[i].Status = svc.PID, string(svc.Status)
		}
	}
	return resp, err
}

// startOrder puts each service after those of names it depends on,
// directly or not, keeping the given order otherwise.
func startOrder(names []string, deps map[svcKey][]string) []string {
	var out []string
	var visit func(name string, chain []svcKey)
	visit = func(name string, chain []svcKey) {
		key := keyOf(name)
		if swapContains(out, name) || slices.Contains(chain, key) {
			return
		}
		for _, d := range deps[key] {
			if _, named := deps[keyOf(d)]; named {
				visit(d, append(chain, key))
			}
		}
		for _, n := range names {
			if keyOf(n) == key {
				out = append(out, n)
				return
			}
		}
	}
	for _, n := range names {
		visit(n, nil)
	}
	return out
}

// shutdownExe restarts Windows; its arguments are constants and the delay,
// never anything a user wrote.
const shutdownExe = `C:\Windows\System32\shutdown.exe`

// nodeReboot asks Windows to restart after req.DelaySeconds, unless another
// run holds the node's lock or a swap is unfinished: a reboot then would
// cut it short.
func nodeReboot(ctx context.Context, w winos.OS, req ops.NodeRebootRequest) (ops.NodeRebootResponse, error) {
	var resp ops.NodeRebootResponse
	if req.DelaySeconds < 0 || req.DelaySeconds > 600 {
		return resp, Fail(ops.KindBadRequest, "delaySeconds must be 0 to 600, not %d", req.DelaySeconds)
	}
	if err := lockCheck(ctx, w, "", "the node was not rebooted"); err != nil {
		return resp, err
	}
	if j, err := journalRead(w, nil); err != nil {
		return resp, fmt.Errorf("%w; the node was not rebooted", err)
	} else if j != nil {
		return resp, Fail(ops.KindUnfinished, "the node has an unfinished swap (%s, started %s); the node was not rebooted: run swdt kubernetes first, it repairs that swap", journalOwner(j), j.Started)
	}
	host, err := w.Hostname()
	if err != nil {
		return resp, err
	}
	resp.Hostname = host
	res, err := w.Run(ctx, winos.Command{Path: shutdownExe, Args: []string{"/r", "/t", strconv.Itoa(req.DelaySeconds), "/d", "p:0:0", "/c", "swdt reboot"}})
	if err != nil {
		return resp, fmt.Errorf("run shutdown.exe: %w", err)
	}
	if res.ExitCode != 0 {
		return resp, Fail(ops.KindRebootRefused, "shutdown.exe /r exited with %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)+string(res.Stdout)))
	}
	return resp, nil
}

// serviceStatus reads each service; a missing one is reported, not an
// error.
func serviceStatus(_ context.Context, w winos.OS, req ops.ServiceStatusRequest) (ops.ServiceStatusResponse, error) {
	resp := ops.ServiceStatusResponse{Services: []ops.ServiceState{}}
	for _, name := range req.Services {
		svc, err := w.Service(name)
		switch {
		case winos.Code(err) == winos.ErrServiceDoesNotExist:
			resp.Services = append(resp.Services, ops.ServiceState{Service: name})
		case err != nil:
			return resp, fmt.Errorf("service %s: %w", name, err)
		default:
			resp.Services = append(resp.Services, ops.ServiceState{Service: name, Exists: true, Status: string(svc.Status), StartType: svc.StartType, PID: svc.PID})
		}
	}
	return resp, nil
}
