package simnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/pwsh"
	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

// call runs op over SSH, through the same wire protocol swdt uses.
func call[Req, Resp any](t *testing.T, ts *TestServer, op ops.Op[Req, Resp], req Req) (Resp, error) {
	t.Helper()
	r := &pwsh.Runner{Exec: ts.Execer()}
	return pwsh.Call(context.Background(), r, op, req)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// swapItem is a swap of the seeded service's binary for content, staged.
func stageItem(t *testing.T, n *Node, service, dest string, content []byte, checks ...ops.HealthCheckSpec) ops.SwapItem {
	t.Helper()
	it := ops.SwapItem{Service: service, Destination: dest, Staged: dest + ".swdt-new", Backup: dest + ".swdt-bak", HealthChecks: checks}
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

func TestOpProvisionInspect(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	if err := n.WriteFile(`C:\k\versioned.exe`, []byte("MZ SIMNODE-VERSION=1.29.1 padding.................................................")); err != nil {
		t.Fatal(err)
	}
	resp, err := call(t, ts, ops.ProvisionInspect, ops.ProvisionInspectRequest{Targets: []ops.ProvisionTarget{
		{Service: "containerd", Destination: `C:\Program Files\containerd\containerd.exe`},
		{Service: "nosuch", Destination: `C:\k\missing.exe`},
		{Service: "kubelet", Destination: `C:\k\versioned.exe`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	content, _ := n.ReadFile(`C:\Program Files\containerd\containerd.exe`)
	wantFiles := []ops.FileInfo{
		{Path: `C:\Program Files\containerd\containerd.exe`, Exists: true, Size: int64(len(content)), SHA256: sum(content), ModTicks: resp.Files[0].ModTicks},
		{Path: `C:\k\missing.exe`},
		{Path: `C:\k\versioned.exe`, Exists: true, Size: 82, SHA256: resp.Files[2].SHA256, Version: "1.29.1", ModTicks: resp.Files[2].ModTicks},
	}
	if !slices.Equal(resp.Files, wantFiles) {
		t.Errorf("files = %+v\nwant %+v", resp.Files, wantFiles)
	}
	var names []string
	for _, s := range resp.Services {
		names = append(names, s.Name)
	}
	// containerd's dependents are followed transitively; kubelet once.
	if want := []string{"containerd", "nosuch", "kubelet", "kube-proxy"}; !slices.Equal(names, want) {
		t.Errorf("services = %v, want %v", names, want)
	}
	c := resp.Services[0]
	if c.Status != "Running" || c.StartType != "Automatic" || c.PID == 0 || !slices.Equal(c.Dependents, []string{"kubelet"}) ||
		c.BinaryPath != `"C:\Program Files\containerd\containerd.exe" --run-service` {
		t.Errorf("containerd = %+v", c)
	}
	if s := resp.Services[1]; s.Exists || s.DependsOn == nil || s.Dependents == nil {
		t.Errorf("missing service = %+v, want exists=false with empty lists", s)
	}
	if k := resp.Services[2]; !slices.Equal(k.DependsOn, []string{"containerd"}) {
		t.Errorf("kubelet dependsOn = %v", k.DependsOn)
	}
}

func TestOpFileHashAndRemove(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	if err := n.WriteFile(`C:\k\kubelet.exe.swdt-new`, []byte("new")); err != nil {
		t.Fatal(err)
	}
	hashes, err := call(t, ts, ops.FileHash, ops.FileHashRequest{Paths: []string{`C:\k\kubelet.exe.swdt-new`, `C:\k\nothing`, `C:\k`}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := n.Stat(`C:\k\kubelet.exe.swdt-new`)
	if err != nil {
		t.Fatal(err)
	}
	want := []ops.FileInfo{{Path: `C:\k\kubelet.exe.swdt-new`, Exists: true, Size: 3, SHA256: sum([]byte("new")), ModTicks: DotNetTicks(st.ModTime)}, {Path: `C:\k\nothing`}, {Path: `C:\k`}}
	if !slices.Equal(hashes.Files, want) {
		t.Errorf("hashes = %+v, want %+v", hashes.Files, want)
	}

	tests := []struct {
		name    string
		paths   []string
		removed []string
		kind    string
	}{
		{"staged and missing", []string{`C:\k\kubelet.exe.swdt-new`, `C:\k\nothing`}, []string{`C:\k\kubelet.exe.swdt-new`}, ""},
		{"a directory is not a file", []string{`C:\k`}, []string{}, ""},
		{"a running binary is locked", []string{`C:\k\kubelet.exe`}, nil, "locked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := call(t, ts, ops.FilesRemove, ops.FilesRemoveRequest{Paths: tt.paths})
			if tt.kind != "" {
				var oe *pwsh.OpError
				if !errors.As(err, &oe) || oe.Kind != tt.kind {
					t.Fatalf("err = %v, want kind %s", err, tt.kind)
				}
				return
			}
			if err != nil || !slices.Equal(resp.Removed, tt.removed) {
				t.Fatalf("removed %v, %v; want %v", resp.Removed, err, tt.removed)
			}
		})
	}
	if !n.Exists(`C:\k\kubelet.exe`) || n.Exists(`C:\k\kubelet.exe.swdt-new`) {
		t.Error("files-remove removed the wrong files")
	}
}

func TestOpServiceSwap(t *testing.T) {
	const kubelet = `C:\k\kubelet.exe`
	tests := []struct {
		name      string
		content   string
		checks    []ops.HealthCheckSpec
		result    string
		errSubstr string
		killed    bool
		running   string // content expected at the destination afterwards
		failedBin bool   // the new binary kept as .swdt-failed
	}{
		{name: "swapped", content: "MZ new kubelet", checks: []ops.HealthCheckSpec{{TCPPort: 10250}, {Command: []string{"whoami.exe"}}},
			result: ops.SwapResultSwapped, running: "MZ new kubelet"},
		{name: "crash on start rolls back", content: "MZ SIMNODE-CRASH-ON-START", result: ops.SwapResultRolledBack,
			errSubstr: "stopped again", failedBin: true},
		{name: "hang on stop is killed", content: "MZ next", result: ops.SwapResultSwapped, killed: true, running: "MZ next"},
		{name: "failed pipe check rolls back", content: "MZ no pipe", checks: []ops.HealthCheckSpec{{NamedPipe: "kubelet-pipe"}},
			result: ops.SwapResultRolledBack, errSubstr: `health check failed: named pipe \\.\pipe\kubelet-pipe does not exist`, failedBin: true},
		{name: "missing health command rolls back", content: "MZ cmd", checks: []ops.HealthCheckSpec{{Command: []string{`C:\k\probe.exe`, "--ok"}}},
			result: ops.SwapResultRolledBack, errSubstr: `command C:\k\probe.exe could not be started`, failedBin: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := StartTest(t)
			n := ts.Node()
			old, _ := n.ReadFile(kubelet)
			if tt.killed {
				// The running binary hangs on stop.
				if err := n.StopService("kube-proxy"); err != nil {
					t.Fatal(err)
				}
				waitStatus(t, n, "kube-proxy", StatusStopped)
				if err := n.StopService("kubelet"); err != nil {
					t.Fatal(err)
				}
				waitStatus(t, n, "kubelet", StatusStopped)
				if err := n.WriteFile(kubelet, []byte("MZ SIMNODE-HANG-ON-STOP")); err != nil {
					t.Fatal(err)
				}
				if err := n.StartService("kube-proxy"); err != nil {
					t.Fatal(err)
				}
				waitStatus(t, n, "kube-proxy", StatusRunning)
				old = []byte("MZ SIMNODE-HANG-ON-STOP")
			}
			it := stageItem(t, n, "kubelet", kubelet, []byte(tt.content), tt.checks...)
			req := swapRequest(it)
			req.StopOrder = []string{"kube-proxy", "kubelet"}
			req.StartOrder = []string{"kubelet", "kube-proxy"}
			resp, err := call(t, ts, ops.ServiceSwap, req)
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
			if (len(resp.Killed) > 0) != tt.killed {
				t.Errorf("killed = %v", resp.Killed)
			}
			want := tt.running
			if want == "" {
				want = string(old)
			}
			if b, _ := n.ReadFile(kubelet); string(b) != want {
				t.Errorf("destination holds %q, want %q", b, want)
			}
			for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
				if svc, _ := n.Service(name); svc.Status != StatusRunning {
					t.Errorf("%s is %s after the swap", name, svc.Status)
				}
			}
			if _, locked := n.LockedBy(kubelet); !locked {
				t.Error("kubelet does not run its destination")
			}
			if n.Exists(it.Staged) {
				t.Error(".swdt-new left behind")
			}
			if b, err := n.ReadFile(kubelet + ".swdt-failed"); tt.failedBin != (err == nil) || (err == nil && string(b) != tt.content) {
				t.Errorf(".swdt-failed = %q, %v", b, err)
			}
			if tt.result == ops.SwapResultRolledBack && tt.name == "crash on start rolls back" {
				if got.ExitCode != 1 || len(got.Events) == 0 || !strings.Contains(got.Events[0], "terminated unexpectedly") {
					t.Errorf("exit code %d, events %q", got.ExitCode, got.Events)
				}
			}
		})
	}
}

func TestOpServiceSwapThreeServicesInOrder(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	items := []ops.SwapItem{
		stageItem(t, n, "containerd", `C:\Program Files\containerd\containerd.exe`, []byte("MZ containerd 2"), ops.HealthCheckSpec{NamedPipe: "containerd-containerd"}),
		stageItem(t, n, "kubelet", `C:\k\kubelet.exe`, []byte("MZ kubelet 2")),
		stageItem(t, n, "kube-proxy", `C:\k\kube-proxy.exe`, []byte("MZ kube-proxy 2"), ops.HealthCheckSpec{TCPPort: 10256}),
	}
	before := ts.State()
	resp, err := call(t, ts, ops.ServiceSwap, swapRequest(items...))
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
		if svc.Status != StatusRunning || svc.StartCount != before.Services[items[i].Service].StartCount+1 {
			t.Errorf("%s = %s, starts %d", svc.Name, svc.Status, svc.StartCount)
		}
	}
	// A second swap replaces the previous backup.
	items[1] = stageItem(t, n, "kubelet", `C:\k\kubelet.exe`, []byte("MZ kubelet 3"))
	req := swapRequest(items[1])
	req.StopOrder, req.StartOrder = []string{"kube-proxy", "kubelet"}, []string{"kubelet", "kube-proxy"}
	if resp, err := call(t, ts, ops.ServiceSwap, req); err != nil || resp.Items[0].Result != ops.SwapResultSwapped {
		t.Fatalf("second swap: %+v, %v", resp, err)
	}
	if b, _ := n.ReadFile(`C:\k\kubelet.exe.swdt-bak`); string(b) != "MZ kubelet 2" {
		t.Errorf("backup = %q", b)
	}
}

func TestOpServiceSwapStagedMissing(t *testing.T) {
	ts := StartTest(t)
	it := ops.SwapItem{Service: "kubelet", Destination: `C:\k\kubelet.exe`, Staged: `C:\k\kubelet.exe.swdt-new`, Backup: `C:\k\kubelet.exe.swdt-bak`}
	_, err := call(t, ts, ops.ServiceSwap, swapRequest(it))
	var oe *pwsh.OpError
	if !errors.As(err, &oe) || oe.Kind != "not-found" || !strings.Contains(oe.Message, "nothing was stopped") {
		t.Fatalf("err = %v", err)
	}
	if svc, _ := ts.Node().Service("kube-proxy"); svc.Status != StatusRunning {
		t.Errorf("kube-proxy is %s", svc.Status)
	}
}

func TestOpServiceSwapNewDirectory(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	if err := n.CreateService(ServiceConfig{Name: "flannel", BinaryPath: `C:\opt\flannel\flanneld.exe`, StartType: StartAutomatic}); err != nil {
		t.Fatal(err)
	}
	// Staged next to a destination whose directory pkg/provision created.
	if err := n.MkdirAll(`C:\opt\flannel`); err != nil {
		t.Fatal(err)
	}
	it := stageItem(t, n, "flannel", `C:\opt\flannel\flanneld.exe`, []byte("MZ flannel"))
	resp, err := call(t, ts, ops.ServiceSwap, ops.ServiceSwapRequest{Items: []ops.SwapItem{it}, StartOrder: []string{"flannel"},
		StopTimeoutMs: 300, StartTimeoutMs: 2000, HealthTimeoutMs: 100})
	if err != nil || resp.Items[0].Result != ops.SwapResultSwapped || resp.Items[0].DowntimeMs != 0 {
		t.Fatalf("%+v, %v", resp, err)
	}
	if n.Exists(it.Backup) {
		t.Error("a backup was made of nothing")
	}
	waitStatus(t, n, "flannel", StatusRunning)
}

func TestOpSwapRecover(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	stopAll(t, n)
	// An interrupted swap: the old kubelet moved to the backup, the new
	// one still staged, every service stopped.
	if err := n.Rename(`C:\k\kubelet.exe`, `C:\k\kubelet.exe.swdt-bak`, false); err != nil {
		t.Fatal(err)
	}
	it := stageItem(t, n, "kubelet", `C:\k\kubelet.exe`, []byte("MZ new"))
	other := stageItem(t, n, "containerd", `C:\Program Files\containerd\containerd.exe`, []byte("MZ c"))
	resp, err := call(t, ts, ops.SwapRecover, ops.SwapRecoverRequest{Items: []ops.SwapItem{it, other}, Start: []string{"containerd", "kubelet", "kube-proxy"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(resp.Restored, []string{`C:\k\kubelet.exe`}) || !slices.Equal(resp.Started, []string{"containerd", "kubelet", "kube-proxy"}) || len(resp.NotStarted) != 0 {
		t.Errorf("resp = %+v", resp)
	}
	if n.Exists(it.Staged) || n.Exists(other.Staged) || n.Exists(it.Backup) {
		t.Error("staged files or backup left behind")
	}
	if b, _ := n.ReadFile(`C:\k\kubelet.exe`); strings.Contains(string(b), "MZ new") {
		t.Error("recover put the staged file into place")
	}

	// Services that will not start are reported, not fatal.
	if err := n.ConfigureService("kube-proxy", func(c *ServiceConfig) { c.StartType = StartDisabled }); err != nil {
		t.Fatal(err)
	}
	if err := n.StopService("kube-proxy"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.WaitService(context.Background(), "kube-proxy", StatusStopped, time.Second); err != nil {
		t.Fatal(err)
	}
	resp, err = call(t, ts, ops.SwapRecover, ops.SwapRecoverRequest{Start: []string{"kubelet", "kube-proxy"}})
	if err != nil || len(resp.Started) != 0 || len(resp.NotStarted) != 1 || resp.NotStarted[0].Service != "kube-proxy" {
		t.Errorf("resp = %+v, %v", resp, err)
	}
}

// The quick check: a Known record whose size and time match is trusted
// (its digest comes back without the file being read); any difference
// means the file is hashed again.
func TestOpProvisionInspectKnown(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	const dest = `C:\k\kubelet.exe`
	content, _ := n.ReadFile(dest)
	st, err := n.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	recorded := strings.Repeat("d", 64) // not the real digest: proves no re-hash
	tests := []struct {
		name       string
		known      *ops.FileInfo
		wantSHA    string
		wantCached bool
	}{
		{name: "no record", known: nil, wantSHA: sum(content)},
		{name: "matching record", known: &ops.FileInfo{Size: st.Size, ModTicks: DotNetTicks(st.ModTime), SHA256: recorded}, wantSHA: recorded, wantCached: true},
		{name: "time moved", known: &ops.FileInfo{Size: st.Size, ModTicks: DotNetTicks(st.ModTime) + 1, SHA256: recorded}, wantSHA: sum(content)},
		{name: "size differs", known: &ops.FileInfo{Size: st.Size + 1, ModTicks: DotNetTicks(st.ModTime), SHA256: recorded}, wantSHA: sum(content)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := call(t, ts, ops.ProvisionInspect, ops.ProvisionInspectRequest{Targets: []ops.ProvisionTarget{{Service: "kubelet", Destination: dest, Known: tt.known}}})
			if err != nil {
				t.Fatal(err)
			}
			if f := resp.Files[0]; f.SHA256 != tt.wantSHA || f.Cached != tt.wantCached || f.ModTicks != DotNetTicks(st.ModTime) {
				t.Errorf("file = %+v, want sha %s cached %v", f, tt.wantSHA, tt.wantCached)
			}
		})
	}
}

// A swap that starts no service (wins.exe placed before its service is
// registered) has nothing to settle: it must not wait settleMs.
func TestOpServiceSwapNothingToStartDoesNotSettle(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	if err := n.MkdirAll(`C:\etc\rancher\wins`); err != nil {
		t.Fatal(err)
	}
	it := stageItem(t, n, "rancher-wins", `C:\etc\rancher\wins\wins.exe`, []byte("MZ wins"))
	req := ops.ServiceSwapRequest{Items: []ops.SwapItem{it}, StopTimeoutMs: 300, StartTimeoutMs: 300, SettleMs: int(time.Hour.Milliseconds()), HealthTimeoutMs: 300}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := pwsh.Call(ctx, &pwsh.Runner{Exec: ts.Execer()}, ops.ServiceSwap, req)
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
// control (error 1061 on Windows): the op lets it finish starting within
// the stop timeout and then stops it, instead of failing with every
// service it already stopped left down.
func TestOpServiceSwapStopsStartPendingService(t *testing.T) {
	ts := StartTest(t, WithDelays(Delays{ServiceStart: 400 * time.Millisecond, ServiceStop: 50 * time.Millisecond, CrashAfter: time.Second}))
	n := ts.Node()
	const kubelet = `C:\k\kubelet.exe`
	if err := n.StopService("kube-proxy"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, n, "kube-proxy", StatusStopped)
	if err := n.StopService("kubelet"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, n, "kubelet", StatusStopped)
	if err := n.StartService("kubelet"); err != nil {
		t.Fatal(err)
	}
	if svc, _ := n.Service("kubelet"); svc.Status != StatusStartPending {
		t.Fatalf("kubelet is %s, want StartPending", svc.Status)
	}
	it := stageItem(t, n, "kubelet", kubelet, []byte("MZ while starting"))
	req := swapRequest(it)
	req.StopOrder = []string{"kube-proxy", "kubelet"}
	req.StartOrder = []string{"kubelet", "kube-proxy"}
	req.StopTimeoutMs = 2000
	resp, err := call(t, ts, ops.ServiceSwap, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 1 || resp.Items[0].Result != ops.SwapResultSwapped || len(resp.Killed) != 0 {
		t.Fatalf("resp = %+v", resp)
	}
	if b, _ := n.ReadFile(kubelet); string(b) != "MZ while starting" {
		t.Errorf("destination holds %q", b)
	}
}

// A service to start that does not exist is reported with the others that
// did not start; it must not end the repair (the op reads its status
// inside the try that reports failures).
func TestOpSwapRecoverMissingService(t *testing.T) {
	ts := StartTest(t)
	resp, err := call(t, ts, ops.SwapRecover, ops.SwapRecoverRequest{Start: []string{"nosuch", "kubelet"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.NotStarted) != 1 || resp.NotStarted[0].Service != "nosuch" || len(resp.Started) != 0 {
		t.Errorf("resp = %+v", resp)
	}
}
