package simnode

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

const (
	testWins       = `C:\etc\rancher\wins\wins.exe`
	testWinsConfig = `C:\etc\rancher\wins\config`
	testWinsSmoke  = `C:\etc\rancher\wins\swdt-smoke.exe`
)

// installWins places a wins binary with content and a config whitelisting
// the smoke path, registers the service and, when start is set, starts it.
func installWins(t *testing.T, ts *TestServer, content string, start bool) {
	t.Helper()
	n := ts.Node()
	if err := n.MkdirAll(`C:\etc\rancher\wins`); err != nil {
		t.Fatal(err)
	}
	if err := n.WriteFile(testWins, []byte(content)); err != nil {
		t.Fatal(err)
	}
	cfg := "white_list:\n  processPaths:\n  - " + strings.ToUpper(testWinsSmoke) + "\n"
	if _, err := call(t, ts, ops.WinsConfigWrite, ops.WinsConfigWriteRequest{Path: testWinsConfig, Content: cfg}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, ts, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins, ConfigPath: testWinsConfig}); err != nil {
		t.Fatal(err)
	}
	if start {
		if err := n.StartService(ops.WinsService); err != nil {
			t.Fatal(err)
		}
		if _, err := n.WaitService(context.Background(), ops.WinsService, StatusRunning, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWinsRegisterAndUnregister(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	if _, err := call(t, ts, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("register without a binary: %v", err)
	}
	installWins(t, ts, "MZ wins v0.15.1", true)
	svc, err := n.Service(ops.WinsService)
	if err != nil {
		t.Fatal(err)
	}
	if svc.StartType != StartAutomatic || svc.DisplayName != "Rancher Wins" || strings.Join(svc.Args, " ") != `srv app run --config `+testWinsConfig {
		t.Errorf("service = %+v", svc)
	}
	// Registering again stops and re-creates the service, as wins does.
	resp, err := call(t, ts, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins})
	if err != nil || !resp.Registered {
		t.Fatalf("re-register: %+v %v", resp, err)
	}
	if svc, _ := n.Service(ops.WinsService); svc.Status != StatusStopped || len(svc.Args) != 3 {
		t.Errorf("after re-register: %+v", svc)
	}
	resp, err = call(t, ts, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins, Unregister: true})
	if err != nil || resp.Registered {
		t.Fatalf("unregister: %+v %v", resp, err)
	}
	if _, err := call(t, ts, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins, Unregister: true}); err == nil || !strings.Contains(err.Error(), "hasn't been registered") {
		t.Errorf("second unregister: %v", err)
	}
}

func TestWinsConfigWrite(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	steps := []struct {
		content     string
		changed     bool
		backup      string
		backupBytes string
	}{
		{content: "listen: rancher_wins\n", changed: true},
		{content: "listen: rancher_wins\n", changed: false},
		{content: "listen: other\n", changed: true, backup: testWinsConfig + ".swdt-bak", backupBytes: "listen: rancher_wins\n"},
	}
	for i, s := range steps {
		resp, err := call(t, ts, ops.WinsConfigWrite, ops.WinsConfigWriteRequest{Path: testWinsConfig, Content: s.content})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if resp.Changed != s.changed || resp.Backup != s.backup {
			t.Errorf("step %d: %+v", i, resp)
		}
		if got, _ := n.ReadFile(testWinsConfig); string(got) != s.content {
			t.Errorf("step %d: config %q", i, got)
		}
		if s.backup != "" {
			if got, _ := n.ReadFile(s.backup); string(got) != s.backupBytes {
				t.Errorf("step %d: backup %q", i, got)
			}
		}
		if n.Exists(testWinsConfig + ".swdt-new") {
			t.Errorf("step %d: staged config left behind", i)
		}
	}
	inspect, err := call(t, ts, ops.WinsInspect, ops.WinsInspectRequest{ConfigPath: testWinsConfig})
	if err != nil || !inspect.ConfigExists || inspect.ConfigContent != "listen: other\n" || inspect.Service.Exists {
		t.Errorf("inspect %+v %v", inspect, err)
	}
}

func TestWinsVerify(t *testing.T) {
	tests := []struct {
		name     string
		binary   string
		start    bool
		config   string // replaces the whitelist when set
		pipes    bool
		getVer   string // substring of GetVersionError; "" means it must work
		deepOK   bool
		deepWhy  string
		noDeep   bool
		wantSvc  ServiceStatus
		noBinary bool
	}{
		{name: "bridge works", binary: "MZ wins v0.15.1", start: true, pipes: true, deepOK: true, wantSvc: StatusRunning},
		{name: "v0.16 has no pipes", binary: "MZ wins v0.16.0 " + MarkerWinsNoPipe, start: true, getVer: `\\.\pipe\rancher_wins`, deepWhy: "exited 1", wantSvc: StatusRunning},
		{name: "service stopped", binary: "MZ wins v0.15.1", getVer: "exited 1", deepWhy: "exited 1", wantSvc: StatusStopped},
		{name: "not whitelisted", binary: "MZ wins v0.15.1", start: true, pipes: true, config: "white_list: {processPaths: []}\n", deepWhy: "exited 1", wantSvc: StatusRunning},
		{name: "no binary", binary: "MZ wins v0.15.1", noBinary: true, getVer: "does not exist", noDeep: true, wantSvc: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := StartTest(t)
			n := ts.Node()
			if !tt.noBinary {
				installWins(t, ts, tt.binary, tt.start)
			}
			if tt.config != "" {
				if err := n.WriteFile(testWinsConfig, []byte(tt.config)); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := call(t, ts, ops.WinsVerify, ops.WinsVerifyRequest{Binary: testWins, Deep: !tt.noDeep, SmokePath: testWinsSmoke})
			if err != nil {
				t.Fatal(err)
			}
			if ServiceStatus(resp.Service.Status) != tt.wantSvc || resp.Service.Exists == tt.noBinary {
				t.Errorf("service %+v", resp.Service)
			}
			if resp.Pipes[ops.WinsPipe] != tt.pipes || resp.Pipes[ops.WinsProxyPipe] != tt.pipes {
				t.Errorf("pipes %v", resp.Pipes)
			}
			if tt.getVer == "" {
				for _, k := range ops.WinsVersionKeys {
					if fmt.Sprint(resp.GetVersion[k]) != fmt.Sprint(resp.Registry[k]) || resp.Registry[k] == nil {
						t.Errorf("%s: get-version %v, registry %v", k, resp.GetVersion[k], resp.Registry[k])
					}
				}
			} else if !strings.Contains(resp.GetVersionError, tt.getVer) {
				t.Errorf("get-version error %q, want %q", resp.GetVersionError, tt.getVer)
			}
			if tt.noDeep {
				if resp.Deep != nil {
					t.Errorf("deep ran: %+v", resp.Deep)
				}
				return
			}
			d := resp.Deep
			if d == nil || d.OK != tt.deepOK || !strings.Contains(d.Error, tt.deepWhy) || len(d.Leftovers) != 0 {
				t.Fatalf("deep %+v", d)
			}
			if tt.deepOK && d.Output != n.Hostname() {
				t.Errorf("deep output %q", d.Output)
			}
			for _, f := range []string{testWinsSmoke, `C:\etc\rancher\wins\rancher-wins-swdt-smoke.exe`} {
				if n.Exists(f) {
					t.Errorf("%s left behind", f)
				}
			}
			if o := n.winsOrphans(); len(o) != 0 {
				t.Errorf("orphans left: %+v", o)
			}
		})
	}
}

func TestWinsOrphansAndUninstall(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	installWins(t, ts, "MZ wins v0.15.1", true)
	// An orphan started through wins: its renamed binary is locked.
	if err := n.WriteFile(`C:\etc\rancher\wins\rancher-wins-agent.exe`, []byte("MZ agent")); err != nil {
		t.Fatal(err)
	}
	pid, err := n.StartProcess(`C:\etc\rancher\wins\rancher-wins-agent.exe`, "")
	if err != nil {
		t.Fatal(err)
	}
	inspect, err := call(t, ts, ops.WinsInspect, ops.WinsInspectRequest{ConfigPath: testWinsConfig})
	if err != nil || len(inspect.Orphans) != 1 || inspect.Orphans[0].PID != pid || inspect.Orphans[0].Name != "rancher-wins-agent.exe" {
		t.Fatalf("inspect orphans %+v %v", inspect.Orphans, err)
	}
	if inspect.Service.Status != "Running" || inspect.Service.StartType != "Automatic" || !strings.Contains(inspect.Service.BinaryPath, testWins) {
		t.Errorf("inspect service %+v", inspect.Service)
	}
	stopped, err := call(t, ts, ops.WinsOrphansStop, ops.WinsOrphansStopRequest{})
	if err != nil || len(stopped.Stopped) != 1 || len(n.winsOrphans()) != 0 {
		t.Fatalf("orphans-stop %+v %v", stopped, err)
	}

	if _, err := n.StartProcess(`C:\etc\rancher\wins\rancher-wins-agent.exe`, ""); err != nil {
		t.Fatal(err)
	}
	if err := n.WriteFile(testWins+".swdt-bak", []byte("MZ old wins")); err != nil {
		t.Fatal(err)
	}
	resp, err := call(t, ts, ops.WinsUninstall, ops.WinsUninstallRequest{Binary: testWins, ConfigPath: testWinsConfig})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.ServiceRemoved || len(resp.Stopped) != 1 || resp.ConfigBackup != testWinsConfig+".swdt-bak" || len(resp.Removed) != 3 {
		t.Errorf("uninstall %+v", resp)
	}
	if _, err := n.Service(ops.WinsService); err == nil {
		t.Error("service still registered")
	}
	for _, f := range []string{testWins, testWins + ".swdt-bak", testWinsConfig} {
		if n.Exists(f) {
			t.Errorf("%s left behind", f)
		}
	}
	if !n.Exists(testWinsConfig + ".swdt-bak") {
		t.Error("config backup missing")
	}
	if o := n.winsOrphans(); len(o) != 0 {
		t.Errorf("processes left: %+v", o)
	}
	// Uninstalling again finds nothing to do.
	resp, err = call(t, ts, ops.WinsUninstall, ops.WinsUninstallRequest{Binary: testWins, ConfigPath: testWinsConfig})
	if err != nil || resp.ServiceRemoved || len(resp.Removed) != 0 {
		t.Errorf("second uninstall %+v %v", resp, err)
	}
}

// A command health check of [wins.exe, cli, hst, get-version] passes only
// while the bridge works, so a wins without it is rolled back.
func TestWinsCommandHealthCheck(t *testing.T) {
	tests := []struct {
		name    string
		binary  string
		start   bool
		argv    []string
		handled bool
		code    int
	}{
		{name: "bridge works", binary: "MZ wins", start: true, argv: []string{testWins, "cli", "hst", "get-version"}, handled: true},
		{name: "no pipe", binary: "MZ wins " + MarkerWinsNoPipe, start: true, argv: []string{testWins, "cli", "hst", "get-version"}, handled: true, code: 1},
		{name: "stopped", binary: "MZ wins", argv: []string{testWins, "cli", "hst", "get-version"}, handled: true, code: 1},
		{name: "unknown subcommand", binary: "MZ wins", start: true, argv: []string{testWins, "cli", "nope"}, handled: true, code: 1},
		{name: "not wins", binary: "MZ wins", argv: []string{`C:\Windows\System32\whoami.exe`}},
		{name: "missing binary", binary: "MZ wins", argv: []string{`C:\nope\wins.exe`, "cli", "hst", "get-version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := StartTest(t)
			installWins(t, ts, tt.binary, tt.start)
			code, out, handled := ts.Node().WinsCommand(context.Background(), tt.argv)
			if handled != tt.handled || code != tt.code {
				t.Errorf("WinsCommand = %d %q %v", code, out, handled)
			}
		})
	}
}

// The deep check cleans up after its own smoke process only: other
// rancher-wins-* processes are workloads wins runs for containers and
// must survive a verification.
func TestWinsVerifyDeepLeavesOtherWinsProcesses(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	installWins(t, ts, "MZ wins v0.15.1", true)
	const workload = `C:\etc\rancher\wins\rancher-wins-kube-proxy.exe`
	if err := n.WriteFile(workload, []byte("MZ kube-proxy")); err != nil {
		t.Fatal(err)
	}
	pid, err := n.StartProcess(workload, "")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := call(t, ts, ops.WinsVerify, ops.WinsVerifyRequest{Binary: testWins, Deep: true, SmokePath: testWinsSmoke})
	if err != nil {
		t.Fatal(err)
	}
	if d := resp.Deep; d == nil || !d.OK || len(d.Leftovers) != 0 {
		t.Fatalf("deep %+v", d)
	}
	if o := n.winsOrphans(); len(o) != 1 || o[0].PID != pid {
		t.Errorf("rancher-wins-* processes after verify: %+v, want only the workload %d", o, pid)
	}
	if n.Exists(`C:\etc\rancher\wins\rancher-wins-swdt-smoke.exe`) || n.Exists(testWinsSmoke) {
		t.Error("smoke files left behind")
	}
}

// A config file that differs only by a UTF-8 BOM is not the config swdt
// renders: inspect reports the BOM and config-write rewrites the file (the
// ops compare bytes, not ReadAllText's BOM-stripped text).
func TestWinsConfigBOMIsAChange(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	const content = "white_list:\n  processPaths: []\n"
	if err := n.MkdirAll(`C:\etc\rancher\wins`); err != nil {
		t.Fatal(err)
	}
	if err := n.WriteFile(testWinsConfig, []byte("\uFEFF"+content)); err != nil {
		t.Fatal(err)
	}
	inspect, err := call(t, ts, ops.WinsInspect, ops.WinsInspectRequest{ConfigPath: testWinsConfig})
	if err != nil || !inspect.ConfigExists || inspect.ConfigContent == content {
		t.Fatalf("inspect %+v, %v", inspect, err)
	}
	w, err := call(t, ts, ops.WinsConfigWrite, ops.WinsConfigWriteRequest{Path: testWinsConfig, Content: content})
	if err != nil || !w.Changed {
		t.Fatalf("write %+v, %v", w, err)
	}
	if b, _ := n.ReadFile(testWinsConfig); string(b) != content {
		t.Errorf("config holds %q", b)
	}
}
