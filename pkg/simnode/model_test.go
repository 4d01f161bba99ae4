package simnode

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pkg/sftp"

	"sigs.k8s.io/swdt/pkg/ops"
)

func waitStatus(t *testing.T, n *Node, name string, want ServiceStatus) Service {
	t.Helper()
	svc, err := n.WaitService(context.Background(), name, want, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func stopAll(t *testing.T, n *Node) {
	t.Helper()
	for _, name := range []string{"kube-proxy", "kubelet", "containerd"} {
		if err := n.StopService(name); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, n, name, StatusStopped)
	}
}

func TestSeededLikeAFreshVM(t *testing.T) {
	ts := StartTest(t)
	st := ts.State()
	for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
		svc := st.Services[name]
		if svc == nil || svc.Status != StatusRunning || svc.PID == 0 || st.Processes[svc.PID] == nil {
			t.Errorf("service %s = %+v, want Running with a process", name, svc)
		}
	}
	if st.Services["rancher-wins"] != nil {
		t.Error("wins is installed on a fresh VM")
	}
	if st.Chocolatey.Installed {
		t.Error("Chocolatey is installed on a fresh VM")
	}
	if v, _ := ts.Node().RegistryValue(KeyTerminalServer, "fDenyTSConnections"); v.Number != 1 {
		t.Errorf("fDenyTSConnections = %d, want 1 (RDP off)", v.Number)
	}
	if r, _ := ts.Node().FirewallRule("RemoteDesktop-UserMode-In-TCP"); r.Enabled {
		t.Error("RDP firewall rule enabled on a fresh VM")
	}
	if !ts.Node().Exists(`C:\k\kubelet.exe`) || !ts.Node().Exists(`c:/program files/containerd/containerd.exe`) {
		t.Error("placeholder binaries missing")
	}
}

func TestSFTPLocking(t *testing.T) {
	ts := StartTest(t)
	sc := ts.SFTP(ts.User())
	n := ts.Node()
	const bin = "/C:/k/kubelet.exe"

	tests := []struct {
		name string
		do   func() error
	}{
		{"create (write+trunc)", func() error { _, err := sc.Create(bin); return err }},
		{"open for write", func() error { _, err := sc.OpenFile(bin, os.O_WRONLY); return err }},
		{"truncate", func() error { return sc.Truncate(bin, 0) }},
		{"remove", func() error { return sc.Remove(bin) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			var se *sftp.StatusError
			if !errors.As(err, &se) || se.FxCode() != sftp.ErrSSHFxFailure {
				t.Fatalf("err = %v, want an SFTP failure status", err)
			}
			if !strings.Contains(err.Error(), "being used by another process") {
				t.Errorf("err = %v, want a sharing violation message", err)
			}
		})
	}
	if data, _ := n.ReadFile(bin); !strings.Contains(string(data), "placeholder kubelet") {
		t.Fatalf("locked binary changed: %q", data)
	}

	// Reading a running binary works.
	f, err := sc.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(f); err != nil {
		t.Fatal(err)
	}
	f.Close()

	// Staging next to it and renaming the running binary away works; the
	// renamed file stays locked, the new one is free.
	w, err := sc.Create(bin + ".swdt-new")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("new kubelet"))
	w.Close()
	if err := sc.Rename(bin, bin+".swdt-bak"); err != nil {
		t.Fatalf("rename of a running binary: %v", err)
	}
	if err := sc.Rename(bin+".swdt-new", bin); err != nil {
		t.Fatal(err)
	}
	if err := sc.Remove(bin + ".swdt-bak"); err == nil || !strings.Contains(err.Error(), "being used") {
		t.Errorf("removing the renamed running binary: err = %v, want a sharing violation", err)
	}
	if p, ok := n.LockedBy(`C:\k\kubelet.exe.swdt-bak`); !ok || p.Service != "kubelet" {
		t.Errorf("LockedBy(.swdt-bak) = %+v, %v", p, ok)
	}
	if _, ok := n.LockedBy(`C:\k\kubelet.exe`); ok {
		t.Error("the new binary is locked")
	}

	// Once the service stops, everything is writable.
	if err := n.StopService("kube-proxy"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, n, "kube-proxy", StatusStopped)
	if err := n.StopService("kubelet"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, n, "kubelet", StatusStopped)
	if err := sc.Remove(bin + ".swdt-bak"); err != nil {
		t.Errorf("remove after stop: %v", err)
	}
	w, err = sc.Create(bin)
	if err != nil {
		t.Fatalf("write after stop: %v", err)
	}
	w.Close()
}

func TestSFTPRenameAndPaths(t *testing.T) {
	ts := StartTest(t)
	sc := ts.SFTP(ts.User())
	n := ts.Node()
	if err := sc.MkdirAll("/C:/tmp/x"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/C:/tmp/x/a", "/C:/tmp/x/b"} {
		f, err := sc.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(p))
		f.Close()
	}
	if err := sc.Rename("/C:/tmp/x/a", "/C:/tmp/x/b"); err == nil {
		t.Error("rename onto an existing file succeeded; Windows refuses")
	}
	if err := sc.PosixRename("/C:/tmp/x/a", "/C:/tmp/x/b"); err != nil {
		t.Errorf("posix-rename: %v", err)
	}
	if data, _ := n.ReadFile(`C:\TMP\X\B`); string(data) != "/C:/tmp/x/a" {
		t.Errorf("content %q after posix-rename (and case-insensitive lookup)", data)
	}
	// Relative drive paths, as some clients send, land on the drive.
	f, err := sc.Create("C:/tmp/rel")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !n.Exists(`C:\tmp\rel`) {
		t.Error("C:/tmp/rel did not land at C:\\tmp\\rel")
	}
	if wd, err := sc.Getwd(); err != nil || wd != "/C:/Users/Administrator" {
		t.Errorf("Getwd = %q, %v", wd, err)
	}
	entries, err := sc.ReadDir("/C:/tmp/x")
	if err != nil || len(entries) != 1 || entries[0].Name() != "b" {
		t.Errorf("ReadDir = %v, %v", entries, err)
	}
	if _, err := sc.Stat("/C:/nope"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat missing = %v, want not exist", err)
	}
	if err := sc.Remove("/C:/tmp/x"); err == nil {
		t.Error("Remove of a directory succeeded")
	}
	if err := sc.RemoveDirectory("/C:/tmp/x"); err == nil {
		t.Error("RemoveDirectory of a non-empty directory succeeded")
	}
	// Escapes never leave the drive.
	for _, p := range []string{"/C:/../../../etc/passwd", "/../state.json"} {
		if _, err := sc.Stat(p); err == nil {
			t.Errorf("Stat(%q) succeeded", p)
		}
	}
}

func TestServiceDependencies(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()

	// Stopping containerd while kubelet runs is refused (SCM error 1051).
	err := n.StopService("containerd")
	var se *ServiceError
	if !errors.As(err, &se) || se.Code != CodeDependentServicesRunning {
		t.Fatalf("stop containerd: err = %v, want error 1051", err)
	}
	stopAll(t, n)
	for _, p := range n.Processes() {
		if slices.Contains([]string{"kube-proxy", "kubelet", "containerd"}, p.Service) { // the system's services (vmcompute, the shared host's) run on
			t.Errorf("process %+v left after every service stopped", p)
		}
	}

	// Starting kube-proxy starts kubelet and containerd first. The
	// clock stands still until the test moves it.
	clock := useTestClock(ts)
	clock.Freeze()
	if err := n.StartService("kube-proxy"); err != nil {
		t.Fatal(err)
	}
	kp, _ := n.Service("kube-proxy")
	kl, _ := n.Service("kubelet")
	cd, _ := n.Service("containerd")
	if kp.Status != StatusStartPending || kl.Status != StatusStartPending || cd.Status != StatusStartPending {
		t.Errorf("statuses after start: %s %s %s", cd.Status, kl.Status, kp.Status)
	}
	if !(cd.PendingUntil.Before(kl.PendingUntil) && kl.PendingUntil.Before(kp.PendingUntil)) {
		t.Errorf("dependencies do not come up first: %v %v %v", cd.PendingUntil, kl.PendingUntil, kp.PendingUntil)
	}
	// All three are due at once (a loaded machine looks later than
	// the start delays): they come up in the order they were due.
	clock.Add(kp.PendingUntil.Sub(clock.Now()) + time.Second)
	for _, name := range []string{"kube-proxy", "kubelet", "containerd"} {
		if s, _ := n.Service(name); s.Status != StatusRunning || s.PID == 0 {
			t.Errorf("%s is %s (PID %d)", name, s.Status, s.PID)
		}
	}
	// Starting a running service is a no-op, like Start-Service.
	if err := n.StartService("kube-proxy"); err != nil {
		t.Errorf("start running: %v", err)
	}
}

func TestServiceStartErrors(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	stopAll(t, n)
	if err := n.Rename(`C:\k\kubelet.exe`, `C:\k\kubelet.old`, false); err != nil {
		t.Fatal(err)
	}
	var se *ServiceError
	if err := n.StartService("kubelet"); !errors.As(err, &se) || se.Code != CodeFileNotFound {
		t.Errorf("start with missing binary: %v", err)
	}
	if svc, _ := n.Service("kubelet"); !strings.Contains(strings.Join(svc.EventLog, "\n"), "failed to start") {
		t.Errorf("event log %q", svc.EventLog)
	}
	if err := n.StartService("nope"); !errors.As(err, &se) || se.Code != CodeServiceDoesNotExist {
		t.Errorf("start unknown: %v", err)
	}
	// Like the SCM, the dependency started before the failure keeps running.
	if svc, _ := n.Service("containerd"); svc.Status == StatusStopped {
		t.Error("containerd was not started as kubelet's dependency")
	}
	waitStatus(t, n, "containerd", StatusRunning)
	if err := n.StopService("containerd"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, n, "containerd", StatusStopped)
	_ = n.ConfigureService("containerd", func(c *ServiceConfig) { c.StartType = StartDisabled })
	if err := n.StartService("containerd"); !errors.As(err, &se) || se.Code != CodeServiceDisabled {
		t.Errorf("start disabled: %v", err)
	}
	// A binary open for writing cannot be started.
	_ = n.ConfigureService("containerd", func(c *ServiceConfig) { c.StartType = StartAutomatic })
	w, err := n.Create(`C:\Program Files\containerd\containerd.exe`)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.StartService("containerd"); !errors.As(err, &se) || se.Code != CodeSharingViolation {
		t.Errorf("start while open for writing: %v", err)
	}
	w.Close()
	if err := n.StartService("containerd"); err != nil {
		t.Errorf("start after close: %v", err)
	}
}

func TestPipesFollowTheirService(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	clock := useTestClock(ts)
	if !n.PipeExists("containerd-containerd") || !n.PipeExists(`\\.\pipe\containerd-containerd`) {
		t.Fatal("containerd pipe missing while containerd runs")
	}
	stopAll(t, n)
	if n.PipeExists("containerd-containerd") {
		t.Error("containerd pipe present after stop")
	}

	// wins: both pipes while running, unless the binary has the marker.
	for _, tc := range []struct {
		content string
		pipes   bool
	}{
		{"wins v0.15.1", true},
		{"wins v0.16.0 " + MarkerWinsNoPipe, false},
	} {
		if err := n.MkdirAll(`C:\etc\rancher\wins`); err != nil {
			t.Fatal(err)
		}
		if err := n.WriteFile(`C:\etc\rancher\wins\wins.exe`, []byte(tc.content)); err != nil {
			t.Fatal(err)
		}
		if err := n.CreateService(ServiceConfig{Name: "rancher-wins", DisplayName: "Rancher Wins", BinaryPath: `C:\etc\rancher\wins\wins.exe`,
			Args: []string{"srv", "app", "run"}, StartType: StartAutomatic}); err != nil {
			t.Fatal(err)
		}
		clock.Freeze()
		if err := n.StartService("rancher-wins"); err != nil {
			t.Fatal(err)
		}
		if n.PipeExists("rancher_wins") {
			t.Error("wins pipe exists while StartPending")
		}
		clock.Add(time.Second)
		clock.Run()
		waitStatus(t, n, "rancher-wins", StatusRunning)
		if got := n.PipeExists("rancher_wins") && n.PipeExists("rancher_wins_proxy"); got != tc.pipes {
			t.Errorf("%s: pipes present = %v, want %v (pipes %v)", tc.content, got, tc.pipes, n.Pipes())
		}
		if err := n.StopService("rancher-wins"); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, n, "rancher-wins", StatusStopped)
		if n.PipeExists("rancher_wins") || n.PipeExists("rancher_wins_proxy") {
			t.Error("wins pipes present after stop")
		}
		if err := n.DeleteService("rancher-wins"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMarkers(t *testing.T) {
	t.Run("crash on start", func(t *testing.T) {
		ts := StartTest(t)
		n := ts.Node()
		stopAll(t, n)
		// The marker may sit anywhere, also across read boundaries.
		content := strings.Repeat("x", 256*1024-10) + MarkerCrashOnStart + strings.Repeat("y", 1000)
		if err := n.WriteFile(`C:\k\kubelet.exe`, []byte(content)); err != nil {
			t.Fatal(err)
		}
		if err := n.StartService("kubelet"); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, n, "kubelet", StatusRunning)
		svc := waitStatus(t, n, "kubelet", StatusStopped)
		if svc.LastExitCode != 1 || svc.PID != 0 {
			t.Errorf("after crash: %+v", svc)
		}
		if len(svc.EventLog) == 0 || !strings.Contains(svc.EventLog[len(svc.EventLog)-1], "The kubelet service terminated unexpectedly") {
			t.Errorf("event log %q", svc.EventLog)
		}
		if _, ok := n.LockedBy(`C:\k\kubelet.exe`); ok {
			t.Error("crashed binary still locked")
		}
	})
	t.Run("found as it was written, then renamed into place", func(t *testing.T) {
		ts := StartTest(t)
		n := ts.Node()
		stopAll(t, n)
		f, err := n.Create(`C:\k\kubelet.exe.new`)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range []string{strings.Repeat("x", 1000) + MarkerCrashOnStart[:5], MarkerCrashOnStart[5:], strings.Repeat("y", 1000)} {
			if _, err := f.Write([]byte(part)); err != nil {
				t.Fatal(err)
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := n.Remove(`C:\k\kubelet.exe`); err != nil {
			t.Fatal(err)
		}
		if err := n.Rename(`C:\k\kubelet.exe.new`, `C:\k\kubelet.exe`, false); err != nil {
			t.Fatal(err)
		}
		cache := n.CachedMarkers(`C:\k\kubelet.exe`)
		if followed := cache[MarkerCrashOnStart]; !followed {
			t.Errorf("the markers found as the file was written did not follow it: %v", cache)
		}
		if err := n.StartService("kubelet"); err != nil {
			t.Fatal(err)
		}
		if svc := waitStatus(t, n, "kubelet", StatusStopped); svc.LastExitCode != 1 {
			t.Errorf("the marker written in two parts did not crash the service: %+v", svc)
		}
	})
	t.Run("hang on stop", func(t *testing.T) {
		ts := StartTest(t)
		n := ts.Node()
		stopAll(t, n)
		if err := n.WriteFile(`C:\Program Files\containerd\containerd.exe`, []byte("containerd "+MarkerHangOnStop)); err != nil {
			t.Fatal(err)
		}
		if err := n.StartService("containerd"); err != nil {
			t.Fatal(err)
		}
		svc := waitStatus(t, n, "containerd", StatusRunning)
		if err := n.StopService("containerd"); err != nil {
			t.Fatal(err)
		}
		if _, err := n.WaitService(context.Background(), "containerd", StatusStopped, 300*time.Millisecond); err == nil {
			t.Fatal("hanging service stopped by itself")
		}
		if s, _ := n.Service("containerd"); s.Status != StatusStopPending {
			t.Errorf("status %s, want StopPending", s.Status)
		}
		if err := n.KillProcess(svc.PID); err != nil {
			t.Fatal(err)
		}
		s := waitStatus(t, n, "containerd", StatusStopped)
		if s.LastExitCode != 1 {
			t.Errorf("exit code %d after kill", s.LastExitCode)
		}
		// The next start of a normal binary stops normally.
		if err := n.WriteFile(`C:\Program Files\containerd\containerd.exe`, []byte("containerd")); err != nil {
			t.Fatal(err)
		}
		if err := n.StartService("containerd"); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, n, "containerd", StatusRunning)
		_ = n.StopService("containerd")
		waitStatus(t, n, "containerd", StatusStopped)
	})
	// SIMNODE-WINS-NO-PIPE is covered by TestPipesFollowTheirService.
}

func TestOrphanProcessLocksItsImage(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	_ = n.MkdirAll(`C:\etc\rancher\wins`)
	_ = n.WriteFile(`C:\etc\rancher\wins\rancher-wins-smoke.exe`, []byte("smoke"))
	pid, err := n.StartProcess(`C:\etc\rancher\wins\rancher-wins-smoke.exe`, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Remove(`C:\etc\rancher\wins\rancher-wins-smoke.exe`); !errors.Is(err, ErrSharingViolation) {
		t.Errorf("remove running orphan: %v", err)
	}
	if err := n.RemoveAll(`C:\etc\rancher`); !errors.Is(err, ErrSharingViolation) {
		t.Errorf("remove directory holding a running orphan: %v", err)
	}
	if err := n.KillProcess(pid); err != nil {
		t.Fatal(err)
	}
	if err := n.Remove(`C:\etc\rancher\wins\rancher-wins-smoke.exe`); err != nil {
		t.Errorf("remove after kill: %v", err)
	}
}

func TestFaults(t *testing.T) {
	t.Run("latency", func(t *testing.T) {
		ts := StartTest(t, WithFaults(Faults{OpLatencyMS: map[string]int{"node-facts": 300}}))
		installAgent(t, ts)
		start := time.Now()
		if _, err := callOp(context.Background(), ts.Execer(), ops.NodeFacts, ops.NodeFactsRequest{}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 300*time.Millisecond {
			t.Errorf("op took %s, want at least the injected 300ms", d)
		}
	})
	t.Run("fail op once", func(t *testing.T) {
		ts := StartTest(t)
		if err := ts.UpdateFaults(func(f *Faults) { f.FailOps = []string{"node-facts"} }); err != nil {
			t.Fatal(err)
		}
		installAgent(t, ts)
		_, err := callOp(context.Background(), ts.Execer(), ops.NodeFacts, ops.NodeFactsRequest{})
		var oe *OpFailure
		if !errors.As(err, &oe) || oe.Kind != "injected" {
			t.Fatalf("err = %v, want an injected failure", err)
		}
		if _, err := callOp(context.Background(), ts.Execer(), ops.NodeFacts, ops.NodeFactsRequest{}); err != nil {
			t.Errorf("second call: %v", err)
		}
		if f := ts.Faults(); len(f.FailOps) != 0 {
			t.Errorf("fault not cleared: %+v", f)
		}
	})
	t.Run("cut connection after N bytes", func(t *testing.T) {
		ts := StartTest(t, WithFaults(Faults{CutAfterBytes: 100_000}))
		sc := ts.SFTP(ts.User())
		f, err := sc.Create("/C:/k/big.swdt-new")
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Write(make([]byte, 1<<20))
		if err == nil {
			err = f.Close()
		}
		if err == nil {
			t.Fatal("1 MiB upload succeeded through a connection cut after 100 kB")
		}
		if ts.Faults().CutAfterBytes != 0 {
			t.Error("cut fault not cleared after it fired")
		}
		fi, err := ts.Node().Stat(`C:\k\big.swdt-new`)
		if err != nil || fi.Size > 200_000 {
			t.Errorf("partial file: %+v %v", fi, err)
		}
		// A new connection works and is not cut again.
		sc2 := ts.SFTP(ts.User())
		g, err := sc2.Create("/C:/k/big.swdt-new")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Write(make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("chocolatey download", func(t *testing.T) {
		ts := StartTest(t, WithFaults(Faults{ChocoDownloadFails: true}))
		n := ts.Node()
		err := n.InstallChocolatey()
		if kind, msg := failureOf(err); kind != "download" || !strings.Contains(msg, "could not be resolved") {
			t.Errorf("install with the fault: %v", err)
		}
		_ = ts.SetFaults(Faults{})
		if err := n.InstallChocolatey(); err != nil {
			t.Fatal(err)
		}
		if c := n.Chocolatey(); !c.Installed || c.Version != "2.2.2" || !n.Exists(PathChoco) {
			t.Errorf("after install: %+v", c)
		}
		res, err := n.ChocoInstall("vim")
		if err != nil || res.ExitCode != 0 {
			t.Errorf("install vim: %+v %v", res, err)
		}
		if res, _ := n.ChocoInstall("no-such-package"); res.ExitCode != 1 {
			t.Errorf("unknown package: %+v", res)
		}
		if res, _ := n.ChocoInstall("dotnetfx"); res.ExitCode != 3010 {
			t.Errorf("reboot package: %+v", res)
		}
		if got := n.ChocoList(); !slices.Contains(got, "vim|9.1.0") {
			t.Errorf("choco list = %v", got)
		}
	})
}

func TestPersistenceAcrossRestart(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	if err := n.StopService("kube-proxy"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, n, "kube-proxy", StatusStopped)
	_ = n.SetRegistryDWord(KeyTerminalServer, "fDenyTSConnections", 0)
	_ = n.SetFirewallRuleEnabled("RemoteDesktop-UserMode-In-TCP", true)
	_ = n.InstallChocolatey()
	_, _ = n.ChocoInstall("grep")
	_ = n.WriteFile(`C:\k\note.txt`, []byte("kept"))
	_ = n.SetACL(PathAdminAuthorizedKeys, &ACL{InheritanceDisabled: true, Entries: []ACE{{Identity: "BUILTIN\\Administrators", Rights: "F"}, {Identity: "NT AUTHORITY\\SYSTEM", Rights: "F"}}})
	before := ts.State()
	fp := ts.HostKeyFingerprint()

	ts.Restart()
	n = ts.Node()
	after := ts.State()
	if ts.HostKeyFingerprint() != fp {
		t.Error("host key changed across restart")
	}
	if after.Services["kube-proxy"].Status != StatusStopped || after.Services["kubelet"].Status != StatusRunning {
		t.Errorf("services after restart: kube-proxy %s, kubelet %s", after.Services["kube-proxy"].Status, after.Services["kubelet"].Status)
	}
	if after.Services["kubelet"].PID != before.Services["kubelet"].PID {
		t.Error("PID changed across restart")
	}
	if v, _ := n.RegistryValue(KeyTerminalServer, "fDenyTSConnections"); v.Number != 0 {
		t.Error("registry change lost")
	}
	if r, _ := n.FirewallRule("RemoteDesktop-UserMode-In-TCP"); !r.Enabled {
		t.Error("firewall change lost")
	}
	if c := n.Chocolatey(); !c.Installed || c.Packages["grep"] == "" {
		t.Errorf("chocolatey lost: %+v", c)
	}
	if data, _ := n.ReadFile(`C:\k\note.txt`); string(data) != "kept" {
		t.Error("file lost")
	}
	if acl, _ := n.ACL(PathAdminAuthorizedKeys); !AdminOnlyACL(acl) {
		t.Errorf("ACL lost: %+v", acl)
	}
	// Ops work against the restarted server.
	installAgent(t, ts)
	if _, err := callOp(context.Background(), ts.Execer(), ops.NodeFacts, ops.NodeFactsRequest{}); err != nil {
		t.Fatal(err)
	}
}

func TestKeysFromAdministratorsAuthorizedKeys(t *testing.T) {
	ts := StartTest(t, WithOptions(func(o *Options) { o.AuthorizedKeys = nil }))
	if c, err := ts.Dial("Administrator"); err == nil {
		c.Close()
		t.Fatal("login without any authorized key")
	}
	n := ts.Node()
	pub, _ := os.ReadFile(ts.PublicKeyFile)
	_ = n.MkdirAll(`C:\ProgramData\ssh`)
	if err := n.WriteFile(PathAdminAuthorizedKeys, pub); err != nil {
		t.Fatal(err)
	}
	if c, err := ts.Dial("Administrator"); err == nil {
		c.Close()
		t.Fatal("key accepted from a file with inherited permissions; sshd ignores it")
	}
	_ = n.SetACL(PathAdminAuthorizedKeys, &ACL{InheritanceDisabled: true, Entries: []ACE{{Identity: "Administrators", Rights: "F"}, {Identity: "SYSTEM", Rights: "F"}}})
	c, err := ts.Dial("Administrator")
	if err != nil {
		t.Fatalf("key in administrators_authorized_keys with the right ACL: %v", err)
	}
	c.Close()
}

// sshd refuses administrators_authorized_keys when its owner is an
// account other than Administrators, SYSTEM or the user logging in, even
// with the right ACL: the owner may rewrite the DACL at will.
func TestKeysRefusedFromAFileAnotherAccountOwns(t *testing.T) {
	ts := StartTest(t, WithOptions(func(o *Options) { o.AuthorizedKeys = nil }), WithAccount(Account{Name: "mallory"}))
	pub, _ := os.ReadFile(ts.PublicKeyFile)
	mallory, err := ts.NodeAs("mallory")
	if err != nil {
		t.Fatal(err)
	}
	// C:\ProgramData lets Users create files; the creator owns them.
	if err := mallory.WriteFile(PathAdminAuthorizedKeys, pub); err != nil {
		t.Fatal(err)
	}
	n := ts.Node()
	if owner, _ := n.Owner(PathAdminAuthorizedKeys); owner != "mallory" {
		t.Fatalf("owner = %q, want mallory", owner)
	}
	if err := n.SetACL(PathAdminAuthorizedKeys, &ACL{InheritanceDisabled: true, Entries: []ACE{{Identity: "Administrators", Rights: "F"}, {Identity: "SYSTEM", Rights: "F"}}}); err != nil {
		t.Fatal(err)
	}
	if c, err := ts.Dial("Administrator"); err == nil {
		c.Close()
		t.Fatal("key accepted from a file mallory owns; sshd refuses it (bad owner)")
	}
	if got := n.SSHDAdminKeys(); got != nil {
		t.Errorf("SSHDAdminKeys = %q from a file mallory owns", got)
	}
	for _, owner := range []string{AccountSystem, "Administrator", AccountAdministrators} {
		if err := n.SetOwner(PathAdminAuthorizedKeys, owner); err != nil {
			t.Fatal(err)
		}
		c, err := ts.Dial("Administrator")
		if err != nil {
			t.Fatalf("owner %s: %v", owner, err)
		}
		c.Close()
	}
}

// The machine writes state.json when its state changed, and only then (a
// swap asks it to save about forty times, half of them with nothing
// changed); what it writes is what a restart reads.
func TestStateSavedWhenChanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "simnode")
	ts := StartTest(t, WithOptions(func(o *Options) { o.StateDir = dir }))
	n := ts.Node()
	path := filepath.Join(dir, "state.json")
	written := func() bool {
		_, err := os.Stat(path)
		return err == nil
	}
	unchanged := func(*State) error { return nil }
	if err := n.Update(unchanged); err != nil {
		t.Fatal(err)
	}
	// What is written from here on is written anew.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := n.Update(unchanged); err != nil {
		t.Fatal(err)
	}
	if written() {
		t.Error("state.json was written though nothing changed")
	}
	if err := n.Update(func(s *State) error {
		s.Firewall["swdt-test"] = &FirewallRule{Name: "swdt-test", Enabled: true}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !written() {
		t.Fatal("state.json was not written after a change")
	}
	ts.Restart()
	if r, ok := ts.Node().FirewallRule("swdt-test"); !ok || !r.Enabled {
		t.Errorf("the change after a restart: %+v (found %t)", r, ok)
	}
}
