package agent_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

const swapKubelet = `C:\k\kubelet.exe`

// swapStage stages content as the new binary of service at dest.
func swapStage(t *testing.T, n *simnode.Node, service, dest string, content []byte, checks ...ops.HealthCheckSpec) ops.SwapItem {
	t.Helper()
	it := ops.SwapItem{Service: service, Destination: dest, Staged: dest + ".swdt-new-a", Backup: dest + ".swdt-bak", HealthChecks: checks, SHA256: provSum(content)}
	if err := n.WriteFile(it.Staged, content); err != nil {
		t.Fatal(err)
	}
	return it
}

func swapRequest(items ...ops.SwapItem) ops.ServiceSwapRequest {
	return ops.ServiceSwapRequest{
		StopOrder: []string{"kube-proxy", "kubelet", "containerd"}, StartOrder: []string{"containerd", "kubelet", "kube-proxy"},
		Items: items, StopTimeoutMs: 300, StartTimeoutMs: 2000, SettleMs: 150, HealthTimeoutMs: 300,
	}
}

// swapKubeletRequest swaps kubelet alone: kube-proxy depends on it.
func swapKubeletRequest(it ops.SwapItem) ops.ServiceSwapRequest {
	req := swapRequest(it)
	req.StopOrder, req.StartOrder = []string{"kube-proxy", "kubelet"}, []string{"kubelet", "kube-proxy"}
	return req
}

func swapWait(t *testing.T, n *simnode.Node, name string, want simnode.ServiceStatus) {
	t.Helper()
	if _, err := n.WaitService(context.Background(), name, want, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}

// swapRunKubelet makes kubelet run content: it is stopped (kube-proxy
// first), its binary replaced, and both started again.
func swapRunKubelet(t *testing.T, n *simnode.Node, content string) {
	t.Helper()
	for _, name := range []string{"kube-proxy", "kubelet"} {
		if err := n.StopService(name); err != nil {
			t.Fatal(err)
		}
		swapWait(t, n, name, simnode.StatusStopped)
	}
	if err := n.WriteFile(swapKubelet, []byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := n.StartService("kube-proxy"); err != nil {
		t.Fatal(err)
	}
	swapWait(t, n, "kube-proxy", simnode.StatusRunning)
	swapWait(t, n, "kubelet", simnode.StatusRunning)
}

// swapAllRunning fails unless the seeded services run, kubelet from its
// destination.
func swapAllRunning(t *testing.T, n *simnode.Node) {
	t.Helper()
	for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
		if svc, _ := n.Service(name); svc.Status != simnode.StatusRunning {
			t.Errorf("%s is %s after the swap", name, svc.Status)
		}
	}
	if p, locked := n.LockedBy(swapKubelet); !locked || p.Service != "kubelet" {
		t.Errorf("kubelet does not run its destination (%+v)", p)
	}
}

func TestServiceSwap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		old       string // kubelet's running binary, when not the seeded one
		content   string
		checks    []ops.HealthCheckSpec
		result    string
		errSubstr string
		killed    bool
		running   string // content expected at the destination afterwards
		failedBin bool   // the new binary kept as .swdt-failed
		events    string // in the first event line of a rolled-back item
	}{
		{name: "swapped", content: "MZ new kubelet", checks: []ops.HealthCheckSpec{{TCPPort: 10250}, {Command: []string{"whoami.exe"}}, {Command: []string{`C:\Windows\System32\hostname.exe`, "-s"}}},
			result: ops.SwapResultSwapped, running: "MZ new kubelet"},
		{name: "crash on start rolls back", content: "MZ " + simnode.MarkerCrashOnStart, result: ops.SwapResultRolledBack,
			errSubstr: "stopped again", failedBin: true, events: "terminated unexpectedly"},
		{name: "hang on stop is killed", old: "MZ " + simnode.MarkerHangOnStop, content: "MZ next", result: ops.SwapResultSwapped, killed: true, running: "MZ next"},
		{name: "pipe check passes", content: "MZ pipe", checks: []ops.HealthCheckSpec{{NamedPipe: "containerd-containerd"}, {NamedPipe: `\\.\pipe\CONTAINERD-containerd`}},
			result: ops.SwapResultSwapped, running: "MZ pipe"},
		{name: "failed pipe check rolls back", content: "MZ no pipe", checks: []ops.HealthCheckSpec{{NamedPipe: "kubelet-pipe"}},
			result: ops.SwapResultRolledBack, errSubstr: `health check failed: named pipe \\.\pipe\kubelet-pipe does not exist`, failedBin: true},
		{name: "failed port check rolls back", content: "MZ no port", checks: []ops.HealthCheckSpec{{TCPPort: 10250}, {TCPPort: 12345}},
			result: ops.SwapResultRolledBack, errSubstr: "health check failed: nothing listens on TCP port 12345", failedBin: true},
		{name: "missing health command rolls back", content: "MZ cmd", checks: []ops.HealthCheckSpec{{Command: []string{`C:\k\probe.exe`, "--ok"}}},
			result: ops.SwapResultRolledBack, errSubstr: `command C:\k\probe.exe could not be started`, failedBin: true},
		{name: "failing health command rolls back", content: "MZ cmd exit", checks: []ops.HealthCheckSpec{{Command: []string{`C:\k\kube-proxy.exe`, "cli", "no-such-command"}}},
			result: ops.SwapResultRolledBack, errSubstr: `command C:\k\kube-proxy.exe exited 1: Incorrect Usage`, failedBin: true},
		{name: "hung health command rolls back", content: "MZ cmd hang", checks: []ops.HealthCheckSpec{{Command: []string{`C:\k\hang.exe`, "cli", "hst", "get-version"}}},
			result: ops.SwapResultRolledBack, errSubstr: `command C:\k\hang.exe did not exit within 1000 ms`, failedBin: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			if err := n.WriteFile(`C:\k\hang.exe`, []byte("MZ "+simnode.MarkerWinsHang)); err != nil {
				t.Fatal(err)
			}
			if tt.old != "" {
				swapRunKubelet(t, n, tt.old)
			}
			old, _ := n.ReadFile(swapKubelet)
			it := swapStage(t, n, "kubelet", swapKubelet, []byte(tt.content), tt.checks...)
			resp, err := provCall(t, ts, ops.ServiceSwap, swapKubeletRequest(it))
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Items) != 1 {
				t.Fatalf("items = %+v", resp.Items)
			}
			got := resp.Items[0]
			if got.Result != tt.result || !strings.Contains(got.Error, tt.errSubstr) {
				t.Errorf("result %s %q, want %s containing %q", got.Result, got.Error, tt.result, tt.errSubstr)
			}
			if got.DowntimeMs <= 0 {
				t.Errorf("downtime = %d", got.DowntimeMs)
			}
			if wantKilled := []string{}; tt.killed != slices.Equal(resp.Killed, []string{"kubelet"}) || !tt.killed && !slices.Equal(resp.Killed, wantKilled) {
				t.Errorf("killed = %v", resp.Killed)
			}
			if len(resp.NotStarted) != 0 || len(resp.AlsoStopped) != 0 {
				t.Errorf("notStarted %+v, alsoStopped %v", resp.NotStarted, resp.AlsoStopped)
			}
			want := tt.running
			if want == "" {
				want = string(old)
			}
			if b, _ := n.ReadFile(swapKubelet); string(b) != want {
				t.Errorf("destination holds %q, want %q", b, want)
			}
			swapAllRunning(t, n)
			if n.Exists(it.Staged) {
				t.Error(".swdt-new left behind")
			}
			if b, err := n.ReadFile(it.Backup); tt.result == ops.SwapResultSwapped && (err != nil || string(b) != string(old)) {
				t.Errorf("backup = %q, %v; want the old binary", b, err)
			}
			if b, err := n.ReadFile(swapKubelet + ".swdt-failed"); tt.failedBin != (err == nil) || (err == nil && string(b) != tt.content) {
				t.Errorf(".swdt-failed = %q, %v", b, err)
			}
			if tt.result == ops.SwapResultRolledBack && !strings.Contains(got.Error, `the new binary was kept as C:\k\kubelet.exe.swdt-failed`) {
				t.Errorf("error %q does not say where the new binary is", got.Error)
			}
			if tt.events != "" {
				if got.ExitCode != 1 || len(got.Events) == 0 || !strings.Contains(got.Events[0], tt.events) {
					t.Errorf("exit code %d, events %q", got.ExitCode, got.Events)
				}
			}
		})
	}
}

func TestServiceSwapThreeServicesInOrder(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	items := []ops.SwapItem{
		swapStage(t, n, "containerd", `C:\Program Files\containerd\containerd.exe`, []byte("MZ containerd 2"), ops.HealthCheckSpec{NamedPipe: "containerd-containerd"}),
		swapStage(t, n, "kubelet", swapKubelet, []byte("MZ kubelet 2")),
		swapStage(t, n, "kube-proxy", `C:\k\kube-proxy.exe`, []byte("MZ kube-proxy 2"), ops.HealthCheckSpec{TCPPort: 10256}),
	}
	before := ts.State()
	resp, err := provCall(t, ts, ops.ServiceSwap, swapRequest(items...))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resp.Items {
		if r.Result != ops.SwapResultSwapped || r.Service != items[i].Service {
			t.Errorf("item %d = %+v", i, r)
		}
		if b, _ := n.ReadFile(items[i].Destination); !strings.HasPrefix(string(b), "MZ "+items[i].Service+" 2") {
			t.Errorf("%s holds %q", items[i].Destination, b)
		}
		svc, _ := n.Service(items[i].Service)
		if svc.Status != simnode.StatusRunning || svc.StartCount != before.Services[items[i].Service].StartCount+1 {
			t.Errorf("%s = %s, starts %d", svc.Name, svc.Status, svc.StartCount)
		}
	}
	// Every stopped service's downtime, in stop order; an item's is its
	// service's.
	var names []string
	for i, d := range resp.Downtime {
		names = append(names, d.Service)
		if !d.Running || d.DowntimeMs <= 0 {
			t.Errorf("downtime %+v", d)
		}
		if r := resp.Items[len(items)-1-i]; r.Service != d.Service || r.DowntimeMs != d.DowntimeMs {
			t.Errorf("item %+v, downtime %+v", r, d)
		}
	}
	if !slices.Equal(names, []string{"kube-proxy", "kubelet", "containerd"}) {
		t.Errorf("downtime of %v", names)
	}
	// containerd stops last and starts first: the shortest downtime.
	if resp.Downtime[2].DowntimeMs >= resp.Downtime[0].DowntimeMs {
		t.Errorf("downtimes %+v", resp.Downtime)
	}

	// A second swap replaces the previous backup.
	items[1] = swapStage(t, n, "kubelet", swapKubelet, []byte("MZ kubelet 3"))
	if resp, err := provCall(t, ts, ops.ServiceSwap, swapKubeletRequest(items[1])); err != nil || resp.Items[0].Result != ops.SwapResultSwapped {
		t.Fatalf("second swap: %+v, %v", resp, err)
	}
	if b, _ := n.ReadFile(swapKubelet + ".swdt-bak"); string(b) != "MZ kubelet 2" {
		t.Errorf("backup = %q", b)
	}
}

// Windows refuses to stop a service while a dependent runs (error 1051):
// the swap stops every running dependent StopOrder left out, first,
// starts it again, and reports its downtime.
func TestServiceSwapStopsDependentsNotInStopOrder(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	it := swapStage(t, n, "containerd", `C:\Program Files\containerd\containerd.exe`, []byte("MZ containerd 2"))
	before := ts.State()
	req := swapRequest(it)
	req.StopOrder, req.StartOrder = []string{"containerd"}, []string{"containerd"}
	resp, err := provCall(t, ts, ops.ServiceSwap, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Items[0].Result != ops.SwapResultSwapped || len(resp.NotStarted) != 0 {
		t.Fatalf("resp = %+v", resp)
	}
	if !slices.Equal(resp.AlsoStopped, []string{"kube-proxy", "kubelet"}) { // in the order they were stopped
		t.Errorf("alsoStopped = %v", resp.AlsoStopped)
	}
	var names []string
	for _, d := range resp.Downtime {
		names = append(names, d.Service)
		if !d.Running || d.DowntimeMs <= 0 {
			t.Errorf("downtime %+v", d)
		}
	}
	if !slices.Equal(names, []string{"kube-proxy", "kubelet", "containerd"}) {
		t.Errorf("downtime of %v, want every stopped service", names)
	}
	for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
		svc, _ := n.Service(name)
		if svc.Status != simnode.StatusRunning || svc.StartCount != before.Services[name].StartCount+1 {
			t.Errorf("%s = %s, starts %d", name, svc.Status, svc.StartCount)
		}
	}
}

// Killing a service's process is a failure to the service control
// manager, which then runs the service's failure actions: the swap turns
// them off before the kill, makes sure the service stays stopped, and
// puts them back afterwards, whatever the outcome.
func TestServiceSwapKillWithRecoveryActions(t *testing.T) {
	t.Parallel()
	restartNow := winos.Recovery{
		Actions:     []winos.RecoveryAction{{Type: winos.RecoveryRestart}, {Type: winos.RecoveryRestart, Delay: 10 * time.Second}},
		ResetPeriod: 24 * time.Hour,
	}
	tests := []struct {
		name string
		// pendingRestart schedules a restart before the swap, as an
		// earlier crash would.
		pendingRestart bool
		content        string
		result         string
		kind           ops.Kind // the op fails with this kind
	}{
		{name: "swapped", content: "MZ next", result: ops.SwapResultSwapped},
		{name: "new binary crashes and is rolled back", content: "MZ " + simnode.MarkerCrashOnStart, result: ops.SwapResultRolledBack},
		{name: "restarted by something else", pendingRestart: true, content: "MZ next", kind: ops.KindService},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n, w := ts.Node(), ts.Node().OS()
			const hang = "MZ " + simnode.MarkerHangOnStop
			swapRunKubelet(t, n, hang)
			if err := w.SetRecovery("kubelet", restartNow); err != nil {
				t.Fatal(err)
			}
			if tt.pendingRestart {
				if err := n.Update(func(s *simnode.State) error {
					s.Services["kubelet"].RestartAt = time.Now()
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := n.Service("kubelet")
			it := swapStage(t, n, "kubelet", swapKubelet, []byte(tt.content))
			resp, err := provCall(t, ts, ops.ServiceSwap, swapKubeletRequest(it))

			if rec, rerr := w.Recovery("kubelet"); rerr != nil || !reflect.DeepEqual(rec, restartNow) {
				t.Errorf("failure actions after the swap = %+v, %v; want them restored to %+v", rec, rerr, restartNow)
			}
			after, _ := n.Service("kubelet")
			for _, line := range after.EventLog[len(before.EventLog):] {
				if strings.Contains(line, "corrective action") {
					t.Errorf("a failure action ran during the swap: %q", line)
				}
			}
			if tt.kind != "" {
				kind, msg := provFailure(t, err)
				if kind != tt.kind || !strings.Contains(msg, "started again") || !strings.Contains(msg, "asked to start again") {
					t.Errorf("failure %s %q", kind, msg)
				}
				if b, _ := n.ReadFile(swapKubelet); string(b) != hang || !n.Exists(it.Staged) {
					t.Errorf("the binary was touched: destination %q", b)
				}
				swapWait(t, n, "kube-proxy", simnode.StatusRunning)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Items[0]; got.Result != tt.result || !slices.Equal(resp.Killed, []string{"kubelet"}) || len(resp.RecoveryNotRestored) != 0 {
				t.Errorf("resp = %+v", resp)
			}
			if tt.result == ops.SwapResultRolledBack {
				// The crash of the new binary restarted nothing either.
				if got := resp.Items[0]; len(got.Events) == 0 || !strings.Contains(got.Events[0], "terminated unexpectedly") {
					t.Errorf("events %q", got.Events)
				}
			}
			// One start by the swap (two with the rollback); none by a
			// failure action.
			starts := 1
			if tt.result == ops.SwapResultRolledBack {
				starts = 2
			}
			if after.StartCount != before.StartCount+starts {
				t.Errorf("kubelet started %d times during the swap, want %d", after.StartCount-before.StartCount, starts)
			}
			swapAllRunning(t, n)
		})
	}
}

// A new binary that crashes must not be restarted by the service's
// failure actions while it is being rolled back: they are off while the
// new binaries are on trial.
func TestServiceSwapCrashWithRecoveryActions(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n, w := ts.Node(), ts.Node().OS()
	rec := winos.Recovery{Actions: []winos.RecoveryAction{{Type: winos.RecoveryRestart, Delay: 10 * time.Millisecond}}, ResetPeriod: time.Hour}
	if err := w.SetRecovery("kubelet", rec); err != nil {
		t.Fatal(err)
	}
	old, _ := n.ReadFile(swapKubelet)
	it := swapStage(t, n, "kubelet", swapKubelet, []byte("MZ "+simnode.MarkerCrashOnStart))
	resp, err := provCall(t, ts, ops.ServiceSwap, swapKubeletRequest(it))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Items[0]; got.Result != ops.SwapResultRolledBack || len(resp.Killed) != 0 {
		t.Errorf("resp = %+v", resp)
	}
	if b, _ := n.ReadFile(swapKubelet); string(b) != string(old) {
		t.Errorf("destination holds %q", b)
	}
	if got, err := w.Recovery("kubelet"); err != nil || !reflect.DeepEqual(got, rec) {
		t.Errorf("failure actions = %+v, %v; want %+v", got, err, rec)
	}
	svc, _ := n.Service("kubelet")
	for _, line := range svc.EventLog {
		if strings.Contains(line, "corrective action") {
			t.Errorf("a failure action ran during the swap: %q", line)
		}
	}
	swapAllRunning(t, n)
}

// A file another process holds open without sharing delete access cannot
// be renamed: the item fails, the old binary stays in place and runs.
func TestServiceSwapRenameDenied(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		locked string
	}{
		{name: "staged file held open", locked: swapKubelet + ".swdt-new-a"},
		{name: "destination held open", locked: swapKubelet},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithFaults(simnode.Faults{HeldOpen: []string{tt.locked}}))
			n := ts.Node()
			old, _ := n.ReadFile(swapKubelet)
			it := swapStage(t, n, "kubelet", swapKubelet, []byte("MZ new"))
			resp, err := provCall(t, ts, ops.ServiceSwap, swapKubeletRequest(it))
			if err != nil {
				t.Fatal(err)
			}
			got := resp.Items[0]
			if got.Result != ops.SwapResultFailed || !strings.Contains(got.Error, "could not rename the staged binary into place") || !strings.Contains(got.Error, tt.locked) {
				t.Errorf("item = %+v", got)
			}
			if got.DowntimeMs <= 0 || len(resp.NotStarted) != 0 {
				t.Errorf("resp = %+v", resp)
			}
			if b, _ := n.ReadFile(swapKubelet); string(b) != string(old) {
				t.Errorf("destination holds %q, want the old binary", b)
			}
			if b, _ := n.ReadFile(it.Staged); string(b) != "MZ new" {
				t.Errorf("staged file holds %q", b)
			}
			if n.Exists(it.Backup) || n.Exists(swapKubelet+".swdt-failed") {
				t.Error("backup or .swdt-failed left behind")
			}
			swapAllRunning(t, n)
		})
	}
}

// Nothing stops before the swap knows it can go through.
func TestServiceSwapRefusedBeforeStopping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		req     func(n *simnode.Node, it ops.SwapItem) ops.ServiceSwapRequest
		message string
	}{
		{name: "staged file missing", message: `staged file C:\k\kubelet.exe.swdt-new-a is missing; nothing was stopped`,
			req: func(n *simnode.Node, it ops.SwapItem) ops.ServiceSwapRequest {
				_ = n.Remove(it.Staged)
				return swapRequest(it)
			}},
		{name: "service to stop missing", message: "service nosuch does not exist; nothing was stopped",
			req: func(_ *simnode.Node, it ops.SwapItem) ops.ServiceSwapRequest {
				req := swapRequest(it)
				req.StopOrder = append(req.StopOrder, "nosuch")
				return req
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			before := ts.State()
			it := swapStage(t, n, "kubelet", swapKubelet, []byte("MZ new"))
			_, err := provCall(t, ts, ops.ServiceSwap, tt.req(n, it))
			if kind, msg := provFailure(t, err); kind != ops.KindNotFound || msg != tt.message {
				t.Errorf("failure %s %q, want not-found %q", kind, msg, tt.message)
			}
			for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
				if svc, _ := n.Service(name); svc.Status != simnode.StatusRunning || svc.StartCount != before.Services[name].StartCount {
					t.Errorf("%s was touched: %s, starts %d", name, svc.Status, svc.StartCount)
				}
			}
		})
	}
}

// A service to start that does not exist is reported with the others
// that did not start; the rest of the swap goes through.
func TestServiceSwapMissingServiceToStart(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	it := swapStage(t, n, "kubelet", swapKubelet, []byte("MZ new"))
	req := swapKubeletRequest(it)
	req.StartOrder = append(req.StartOrder, "nosuch")
	resp, err := provCall(t, ts, ops.ServiceSwap, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Items[0].Result != ops.SwapResultSwapped || len(resp.NotStarted) != 1 || resp.NotStarted[0].Service != "nosuch" ||
		!strings.Contains(resp.NotStarted[0].Error, "does not exist") {
		t.Errorf("resp = %+v", resp)
	}
	swapAllRunning(t, n)
}

func TestServiceSwapNewDirectory(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	if err := n.CreateService(simnode.ServiceConfig{Name: "flannel", BinaryPath: `C:\opt\flannel\flanneld.exe`, StartType: simnode.StartAutomatic}); err != nil {
		t.Fatal(err)
	}
	// Staged next to a destination whose directory pkg/hotswap created.
	if err := n.MkdirAll(`C:\opt\flannel`); err != nil {
		t.Fatal(err)
	}
	it := swapStage(t, n, "flannel", `C:\opt\flannel\flanneld.exe`, []byte("MZ flannel"))
	resp, err := provCall(t, ts, ops.ServiceSwap, ops.ServiceSwapRequest{Items: []ops.SwapItem{it}, StartOrder: []string{"flannel"},
		StopTimeoutMs: 300, StartTimeoutMs: 2000, HealthTimeoutMs: 100})
	if err != nil || resp.Items[0].Result != ops.SwapResultSwapped || resp.Items[0].DowntimeMs != 0 || len(resp.Downtime) != 0 {
		t.Fatalf("%+v, %v", resp, err)
	}
	if n.Exists(it.Backup) {
		t.Error("a backup was made of nothing")
	}
	swapWait(t, n, "flannel", simnode.StatusRunning)
}

// A swap that starts no service (wins.exe placed before its service is
// registered) has nothing to settle: it must not wait settleMs.
func TestServiceSwapNothingToStartDoesNotSettle(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	if err := n.MkdirAll(`C:\etc\rancher\wins`); err != nil {
		t.Fatal(err)
	}
	it := swapStage(t, n, "rancher-wins", `C:\etc\rancher\wins\wins.exe`, []byte("MZ wins"))
	req := ops.ServiceSwapRequest{Items: []ops.SwapItem{it}, StopTimeoutMs: 300, StartTimeoutMs: 300, SettleMs: int(time.Hour.Milliseconds()), HealthTimeoutMs: 300}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := agent.Call(ctx, n.OS(), ops.ServiceSwap, req)
	if err != nil {
		t.Fatalf("the swap waited for a settle period with nothing started: %v", err)
	}
	if len(resp.Items) != 1 || resp.Items[0].Result != ops.SwapResultSwapped {
		t.Fatalf("items = %+v", resp.Items)
	}
	if b, _ := n.ReadFile(it.Destination); string(b) != "MZ wins" {
		t.Fatalf("destination holds %q", b)
	}
}

// A service still starting when the swap begins cannot take a stop
// control (error 1061): the op lets it finish starting within the stop
// timeout and then stops it, instead of failing with every service it
// already stopped left down.
func TestServiceSwapStopsStartPendingService(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithDelays(simnode.Delays{ServiceStart: 400 * time.Millisecond, ServiceStop: 50 * time.Millisecond, CrashAfter: time.Second}))
	n := ts.Node()
	for _, name := range []string{"kube-proxy", "kubelet"} {
		if err := n.StopService(name); err != nil {
			t.Fatal(err)
		}
		swapWait(t, n, name, simnode.StatusStopped)
	}
	if err := n.StartService("kubelet"); err != nil {
		t.Fatal(err)
	}
	if svc, _ := n.Service("kubelet"); svc.Status != simnode.StatusStartPending {
		t.Fatalf("kubelet is %s, want StartPending", svc.Status)
	}
	it := swapStage(t, n, "kubelet", swapKubelet, []byte("MZ while starting"))
	req := swapKubeletRequest(it)
	req.StopTimeoutMs = 2000
	resp, err := provCall(t, ts, ops.ServiceSwap, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 1 || resp.Items[0].Result != ops.SwapResultSwapped || len(resp.Killed) != 0 {
		t.Fatalf("resp = %+v", resp)
	}
	if b, _ := n.ReadFile(swapKubelet); string(b) != "MZ while starting" {
		t.Errorf("destination holds %q", b)
	}
	// kube-proxy was already stopped: the swap did not stop it, but
	// starts it as StartOrder says.
	var names []string
	for _, d := range resp.Downtime {
		names = append(names, d.Service)
	}
	if !slices.Equal(names, []string{"kubelet"}) {
		t.Errorf("downtime of %v", names)
	}
	swapAllRunning(t, n)
}

// A swap cut short (its time is up) still puts the failure actions back
// and leaves no service it stopped down.
func TestServiceSwapCutShort(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n, w := ts.Node(), ts.Node().OS()
	rec := winos.Recovery{Actions: []winos.RecoveryAction{{Type: winos.RecoveryRestart, Delay: 5 * time.Second}}, ResetPeriod: time.Hour}
	if err := w.SetRecovery("kubelet", rec); err != nil {
		t.Fatal(err)
	}
	it := swapStage(t, n, "kubelet", swapKubelet, []byte("MZ new"))
	req := swapKubeletRequest(it)
	req.SettleMs = int(time.Hour.Milliseconds())
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := agent.Call(ctx, w, ops.ServiceSwap, req)
	if kind, msg := provFailure(t, err); kind != ops.KindTimeout || !strings.Contains(msg, "cut short") || !strings.Contains(msg, "asked to start again (kubelet, kube-proxy)") {
		t.Errorf("failure %s %q", kind, msg)
	}
	if got, err := w.Recovery("kubelet"); err != nil || !reflect.DeepEqual(got, rec) {
		t.Errorf("failure actions = %+v, %v; want %+v", got, err, rec)
	}
	swapWait(t, n, "kube-proxy", simnode.StatusRunning)
	swapAllRunning(t, n)
}
