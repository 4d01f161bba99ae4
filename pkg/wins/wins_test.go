package wins_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/source"
	"sigs.k8s.io/swdt/pkg/wins"
)

const (
	goodWins  = "MZ rancher/wins v0.15.1\n"
	noPipe    = "MZ rancher/wins v0.16.0 " + simnode.MarkerWinsNoPipe + "\n"
	winsExe   = `C:\etc\rancher\wins\wins.exe`
	winsCfg   = `C:\etc\rancher\wins\config`
	smokeCopy = `C:\etc\rancher\wins\rancher-wins-swdt-smoke.exe`
)

// fixture is a simnode, a node connected to it and a local wins.exe.
type fixture struct {
	ts   *simnode.TestServer
	sim  *simnode.Node
	n    *node.Node
	spec *v1alpha1.WinsSpec
	opts wins.Options
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ts := simnode.StartTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	spec := v1alpha1.Node{}
	spec.Name = "winworker"
	spec.Spec.Credentials = ts.Credentials()
	n, err := node.Connect(ctx, spec, node.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	f := &fixture{ts: ts, sim: ts.Node(), n: n,
		spec: &v1alpha1.WinsSpec{SourceURL: filepath.Join(t.TempDir(), "wins.exe"), Destination: winsExe,
			WhiteList: v1alpha1.WinsWhiteList{ProcessPaths: []string{`C:\etc\rancher\wins\agent.exe`}, ProxyPorts: []int32{9796}}},
		opts: wins.Options{Resolver: &source.Resolver{CacheDir: t.TempDir()},
			Swap: hotswap.Options{StopTimeout: 2 * time.Second, StartTimeout: 2 * time.Second, Settle: 30 * time.Millisecond, HealthTimeout: 300 * time.Millisecond}},
	}
	f.build(t, goodWins)
	return f
}

// build writes the local wins.exe, as `go build` would.
func (f *fixture) build(t *testing.T, content string) {
	t.Helper()
	if err := os.WriteFile(f.spec.SourceURL, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	// A new modification time, so the source's hash cache sees a change
	// even within the file system's timestamp resolution.
	later := time.Now().Add(time.Duration(len(content)) * time.Second)
	if err := os.Chtimes(f.spec.SourceURL, later, later); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) deploy(t *testing.T) *wins.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := wins.Deploy(ctx, f.n, f.spec, f.opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *fixture) service(t *testing.T) simnode.Service {
	t.Helper()
	svc, err := f.sim.Service(ops.WinsService)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func (f *fixture) binary(t *testing.T) string {
	t.Helper()
	b, err := f.sim.ReadFile(winsExe)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func checksOK(t *testing.T, r *wins.Report, names ...string) {
	t.Helper()
	if len(r.Checks) != len(names) {
		t.Fatalf("checks %+v, want %v", r.Checks, names)
	}
	for i, c := range r.Checks {
		if c.Name != names[i] || !c.OK {
			t.Errorf("check %d: %+v, want %s ok", i, c, names[i])
		}
	}
}

func orphans(sim *simnode.Node) []string {
	var out []string
	for _, p := range sim.Processes() {
		if strings.Contains(strings.ToLower(p.Image), ops.WinsProcessPrefix) {
			out = append(out, p.Image)
		}
	}
	return out
}

func TestDeployFreshNodeThenNothingChanges(t *testing.T) {
	f := newFixture(t)
	r := f.deploy(t)
	d := r.Deploy
	if d.Action != wins.ActionInstalled || d.Binary != hotswap.ActionUpdated || !d.Registered || !d.ConfigChanged || d.BytesSent != int64(len(goodWins)) {
		t.Errorf("first deploy %+v", d)
	}
	checksOK(t, r, wins.CheckService, wins.CheckPipes, wins.CheckGetVersion)
	if r.Failed() {
		t.Error("report failed")
	}
	svc := f.service(t)
	if svc.Status != simnode.StatusRunning || svc.StartType != simnode.StartAutomatic || !strings.EqualFold(svc.BinaryPath, winsExe) {
		t.Errorf("service %+v", svc)
	}
	cfg, _ := f.sim.ReadFile(winsCfg)
	for _, want := range []string{"listen: rancher_wins\n", "proxy: rancher_wins_proxy\n", `C:\etc\rancher\wins\agent.exe`, `C:\Program Files\swdt\swdt-smoke.exe`, "- 9796"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}

	starts := svc.StartCount
	r = f.deploy(t)
	if r.Deploy.Action != wins.ActionUnchanged || r.Deploy.Binary != hotswap.ActionUnchanged || r.Deploy.ConfigChanged || r.Deploy.BytesSent != 0 || r.Deploy.Restarted {
		t.Errorf("second deploy %+v", r.Deploy)
	}
	checksOK(t, r, wins.CheckService, wins.CheckPipes, wins.CheckGetVersion)
	if got := f.service(t).StartCount; got != starts {
		t.Errorf("service started %d more times", got-starts)
	}
}

// A verification that cannot run after a deploy fails a check; the deploy
// is still reported (it happened), not replaced by "nothing was done".
func TestDeployReportedWhenVerifyFails(t *testing.T) {
	f := newFixture(t)
	if err := f.ts.UpdateFaults(func(fl *simnode.Faults) { fl.FailOps = []string{ops.WinsVerify.Name} }); err != nil {
		t.Fatal(err)
	}
	r := f.deploy(t)
	if r.Deploy == nil || r.Deploy.Action != wins.ActionInstalled {
		t.Errorf("deploy %+v, want installed", r.Deploy)
	}
	if len(r.Checks) != 1 || r.Checks[0].Name != wins.CheckVerify || r.Checks[0].OK ||
		!strings.Contains(r.Checks[0].Detail, ops.WinsVerify.Name) || !strings.Contains(r.Checks[0].Detail, "swdt wins verify") {
		t.Errorf("checks %+v, want one failed verify check naming the op and what to run", r.Checks)
	}
	if !r.Failed() {
		t.Error("report not failed")
	}
}

func TestWhitelistChange(t *testing.T) {
	tests := []struct {
		name    string
		paths   []string
		action  wins.Action
		restart bool
	}{
		{name: "changed whitelist rewrites and restarts", paths: []string{`C:\etc\rancher\wins\other.exe`}, action: wins.ActionReconfigured, restart: true},
		{name: "unchanged whitelist leaves wins alone", paths: []string{`C:\etc\rancher\wins\agent.exe`}, action: wins.ActionUnchanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.deploy(t)
			before, _ := f.sim.ReadFile(winsCfg)
			starts := f.service(t).StartCount
			f.spec.WhiteList.ProcessPaths = tt.paths
			r := f.deploy(t)
			if r.Deploy.Action != tt.action || r.Deploy.ConfigChanged != tt.restart || r.Deploy.Restarted != tt.restart || r.Deploy.Binary != hotswap.ActionUnchanged {
				t.Errorf("deploy %+v", r.Deploy)
			}
			checksOK(t, r, wins.CheckService, wins.CheckPipes, wins.CheckGetVersion)
			after, _ := f.sim.ReadFile(winsCfg)
			if got := f.service(t).StartCount - starts; (got == 1) != tt.restart || got > 1 {
				t.Errorf("service started %d times", got)
			}
			if tt.restart {
				backup, _ := f.sim.ReadFile(winsCfg + ".swdt-bak")
				if string(backup) != string(before) || !strings.Contains(string(after), tt.paths[0]) || r.Deploy.ConfigBackup == "" {
					t.Errorf("config %q, backup %q", after, backup)
				}
			} else if string(after) != string(before) {
				t.Errorf("config rewritten: %q", after)
			}
		})
	}
}

func TestWinsWithoutBridge(t *testing.T) {
	t.Run("fresh node", func(t *testing.T) {
		f := newFixture(t)
		f.build(t, noPipe)
		r := f.deploy(t)
		if r.Deploy.Action != wins.ActionInstalled || !r.Failed() {
			t.Errorf("deploy %+v", r.Deploy)
		}
		for _, c := range r.Checks {
			switch c.Name {
			case wins.CheckService:
				if !c.OK {
					t.Errorf("%+v", c)
				}
			case wins.CheckPipes, wins.CheckGetVersion:
				if c.OK || !strings.Contains(c.Detail, "v0.16") || !strings.Contains(c.Detail, "v0.15.x or earlier") {
					t.Errorf("%+v", c)
				}
			}
		}
	})
	t.Run("update is rolled back", func(t *testing.T) {
		f := newFixture(t)
		f.deploy(t)
		f.build(t, noPipe)
		r := f.deploy(t)
		d := r.Deploy
		if d.Action != wins.ActionRolledBack || !strings.Contains(d.Error, `\\.\pipe\rancher_wins`) || !strings.Contains(d.Error, "v0.15.x or earlier") || !r.Failed() {
			t.Errorf("deploy %+v", d)
		}
		if got := f.binary(t); got != goodWins {
			t.Errorf("binary after rollback %q", got)
		}
		if !f.sim.Exists(winsExe + ".swdt-failed") {
			t.Error("the failed binary was not kept")
		}
		checksOK(t, r, wins.CheckService, wins.CheckPipes, wins.CheckGetVersion)
	})
}

// Orphans are stopped before the swap, and a wins that fails after the
// swap is rolled back.
func TestUpdateStopsOrphansAndRollsBackOnFailedCheck(t *testing.T) {
	f := newFixture(t)
	f.deploy(t)
	orphan := `C:\etc\rancher\wins\rancher-wins-agent.exe`
	if err := f.sim.WriteFile(orphan, []byte("MZ agent")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sim.StartProcess(orphan, ""); err != nil {
		t.Fatal(err)
	}
	f.build(t, "MZ rancher/wins v0.15.2\n")
	r := f.deploy(t)
	if r.Deploy.Action != wins.ActionUpdated || r.Deploy.StoppedOrphans != 1 || len(orphans(f.sim)) != 0 {
		t.Errorf("deploy %+v, orphans %v", r.Deploy, orphans(f.sim))
	}
	checksOK(t, r, wins.CheckService, wins.CheckPipes, wins.CheckGetVersion)

	// A wins that exits soon after starting fails the swap's settle check
	// (simnode crashes it 100ms after Running).
	f.opts.Swap.Settle = 250 * time.Millisecond
	f.build(t, "MZ rancher/wins broken "+simnode.MarkerCrashOnStart+"\n")
	r = f.deploy(t)
	if r.Deploy.Action != wins.ActionRolledBack || !r.Failed() {
		t.Errorf("deploy %+v", r.Deploy)
	}
	if got := f.binary(t); got != "MZ rancher/wins v0.15.2\n" {
		t.Errorf("binary after rollback %q", got)
	}
	if f.service(t).Status != simnode.StatusRunning {
		t.Error("service not running after rollback")
	}
}

func TestDeep(t *testing.T) {
	f := newFixture(t)
	f.opts.Deep = true
	r := f.deploy(t)
	checksOK(t, r, wins.CheckService, wins.CheckPipes, wins.CheckGetVersion, wins.CheckDeep)
	if !strings.Contains(r.Checks[3].Detail, f.sim.Hostname()) {
		t.Errorf("deep detail %q", r.Checks[3].Detail)
	}
	if o := orphans(f.sim); len(o) != 0 {
		t.Errorf("processes left: %v", o)
	}
	for _, p := range []string{smokeCopy, `C:\etc\rancher\wins\swdt-smoke.exe`} {
		if f.sim.Exists(p) {
			t.Errorf("%s left behind", p)
		}
	}
	// Verify alone, deep, reads the same and leaves nothing either.
	v, err := wins.Verify(context.Background(), f.n, f.spec, true)
	if err != nil {
		t.Fatal(err)
	}
	checksOK(t, v, wins.CheckService, wins.CheckPipes, wins.CheckGetVersion, wins.CheckDeep)
	if f.sim.Exists(smokeCopy) || len(orphans(f.sim)) != 0 {
		t.Error("verify --deep left something behind")
	}
}

func TestVerifyWithoutWins(t *testing.T) {
	f := newFixture(t)
	r, err := wins.Verify(context.Background(), f.n, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Failed() || r.Checks[0].OK || !strings.Contains(r.Checks[0].Detail, "not registered") {
		t.Errorf("checks %+v", r.Checks)
	}
}

func TestDryRun(t *testing.T) {
	f := newFixture(t)
	f.opts.DryRun = true
	r := f.deploy(t)
	if r.Deploy.Action != wins.ActionInstall || r.Deploy.Binary != hotswap.ActionUpdate || len(r.Checks) != 0 {
		t.Errorf("dry run %+v", r.Deploy)
	}
	if f.sim.Exists(winsExe) || f.sim.Exists(winsCfg) {
		t.Error("dry run changed the node")
	}
	if _, err := f.sim.Service(ops.WinsService); err == nil {
		t.Error("dry run registered the service")
	}
}

func TestUninstall(t *testing.T) {
	f := newFixture(t)
	f.opts.Deep = true
	f.deploy(t)
	orphan := `C:\etc\rancher\wins\rancher-wins-agent.exe`
	if err := f.sim.WriteFile(orphan, []byte("MZ agent")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.sim.StartProcess(orphan, ""); err != nil {
		t.Fatal(err)
	}
	r, err := wins.Uninstall(context.Background(), f.n, f.spec)
	if err != nil {
		t.Fatal(err)
	}
	u := r.Uninstall
	if !u.ServiceRemoved || u.StoppedProcesses != 1 || u.ConfigBackup != winsCfg+".swdt-bak" {
		t.Errorf("uninstall %+v", u)
	}
	if _, err := f.sim.Service(ops.WinsService); err == nil {
		t.Error("service left")
	}
	if f.sim.Exists(winsExe) || f.sim.Exists(winsCfg) || !f.sim.Exists(winsCfg+".swdt-bak") {
		t.Error("files left, or no config backup")
	}
	if o := orphans(f.sim); len(o) != 0 {
		t.Errorf("processes left: %v", o)
	}
}
