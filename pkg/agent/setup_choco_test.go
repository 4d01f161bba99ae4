package agent_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

func TestChocoInstall(t *testing.T) {
	tests := []struct {
		name    string
		faults  simnode.Faults
		user    string // "" means Administrator
		prepare func(t *testing.T, n *simnode.Node)
		kind    ops.Kind
		message []string
		version string
	}{
		{name: "installs", version: "2.2.2"},
		{name: "installs v1 without .NET 4.8", version: "1.4.0", prepare: func(t *testing.T, n *simnode.Node) {
			server2019(t, n)
			setInstallVersion(t, n, "1.4.0")
		}},
		{name: "download fails", faults: simnode.Faults{ChocoDownloadFails: true}, kind: ops.KindDownloadFailed,
			message: []string{"could not download", "https://community.chocolatey.org/install.ps1", "The remote name could not be resolved", "internet access"}},
		{name: "download fails before .NET is looked at", faults: simnode.Faults{ChocoDownloadFails: true}, prepare: server2019,
			kind: ops.KindDownloadFailed, message: []string{"could not download"}},
		{name: "constrained language mode", prepare: func(t *testing.T, n *simnode.Node) {
			if err := n.Update(func(s *simnode.State) error { s.LanguageMode = "ConstrainedLanguage"; return nil }); err != nil {
				t.Fatal(err)
			}
		}, kind: ops.KindConstrainedLanguage, message: []string{"ConstrainedLanguage", "WDAC", "AppLocker", "run swdt setup again"}},
		{name: "installer fails", user: "developer", kind: ops.KindInstallFailed,
			message: []string{"installer stopped with an error", `C:\ProgramData\chocolatey\choco.exe does not exist`, "requires Administrative permissions"}},
		{name: "reboot required after .NET 4.8", prepare: server2019, kind: ops.KindRebootRequired,
			message: []string{"Reboot the node", "run swdt setup again", ".NET Framework 4.8", "this node ran .NET Framework 4.7.2", "a reboot is required"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithFaults(tc.faults), simnode.WithAccount(simnode.Account{Name: "developer"}))
			n := ts.Node()
			if tc.prepare != nil {
				tc.prepare(t, n)
			}
			w := n.OS()
			if tc.user != "" {
				w = setupOSAs(t, ts, tc.user)
			}
			st, err := agent.Call(setupCtx(t), w, ops.ChocoInstall, ops.ChocoInstallRequest{})
			if tc.kind != "" {
				setupWantFailure(t, err, tc.kind, tc.message...)
				if ts.State().Chocolatey.Installed || n.Exists(simnode.PathChoco) {
					t.Error("Chocolatey installed although the install failed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !st.Installed || st.Version != tc.version || st.Packages == nil || !n.Exists(simnode.PathChoco) {
				t.Errorf("state = %+v, choco.exe exists = %v", st, n.Exists(simnode.PathChoco))
			}
			// A second install leaves it as it is.
			if st2, err := agent.Call(setupCtx(t), n.OS(), ops.ChocoInstall, ops.ChocoInstallRequest{}); err != nil || st2.Version != tc.version {
				t.Errorf("second install: %+v, %v", st2, err)
			}
		})
	}
}

// TestChocoInstallRebootThenRerun plays a stock Server 2019: the first run
// installs .NET 4.8 and asks for a reboot, so does a run before the
// reboot, and the run after it completes.
func TestChocoInstallRebootThenRerun(t *testing.T) {
	ts := simnode.StartTest(t)
	n := ts.Node()
	server2019(t, n)
	for range 2 {
		_, err := agent.Call(setupCtx(t), n.OS(), ops.ChocoInstall, ops.ChocoInstallRequest{})
		setupWantFailure(t, err, ops.KindRebootRequired, "Reboot the node")
	}
	if err := n.Reboot(); err != nil {
		t.Fatal(err)
	}
	st, err := agent.Call(setupCtx(t), n.OS(), ops.ChocoInstall, ops.ChocoInstallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.Installed || st.Version != "2.2.2" {
		t.Errorf("after the reboot: %+v", st)
	}
	if v, _ := n.RegistryValue(simnode.KeyNetFx4, "Release"); v.Number != simnode.NetFx48 {
		t.Errorf(".NET release after the reboot = %d, want %d", v.Number, simnode.NetFx48)
	}
}

func TestChocoInstallTimeLimit(t *testing.T) {
	agent.ShortenSetupLimits(t, agent.SetupLimits{ChocoSetup: time.Nanosecond})
	ts := simnode.StartTest(t)
	_, err := agent.Call(setupCtx(t), ts.Node().OS(), ops.ChocoInstall, ops.ChocoInstallRequest{})
	setupWantFailure(t, err, "timeout", "did not finish within")
	if ts.State().Chocolatey.Installed {
		t.Error("Chocolatey installed although the script was stopped")
	}
}

func TestChocoPackages(t *testing.T) {
	ts := simnode.StartTest(t)
	n := ts.Node()
	ctx := setupCtx(t)

	_, err := agent.Call(ctx, n.OS(), ops.ChocoPackages, ops.ChocoPackagesRequest{Packages: []string{"vim"}})
	setupWantFailure(t, err, "not-found", "Chocolatey is not installed")
	if err := n.InstallChocolatey(); err != nil {
		t.Fatal(err)
	}
	if err := n.Update(func(s *simnode.State) error {
		s.Chocolatey.Catalog["broken"] = simnode.ChocoPackage{Version: "1.0.0", ExitCode: 1603}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := agent.Call(ctx, n.OS(), ops.ChocoPackages, ops.ChocoPackagesRequest{Packages: []string{"vim", "no-such-package", "dotnetfx", "vcredist140", "broken", "vim"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []ops.ChocoPackageResult{
		{Name: "vim", Result: ops.PackageInstalled, Version: "9.1.0"},
		{Name: "no-such-package", Result: ops.PackageNotFound, ExitCode: 1},
		{Name: "dotnetfx", Result: ops.PackageInstalled, ExitCode: 3010, RebootRequired: true, Version: "4.8.0.20220524"},
		{Name: "vcredist140", Result: ops.PackageInstalled, ExitCode: 1641, RebootRequired: true, Version: "14.38.33135"},
		{Name: "broken", Result: ops.PackageFailed, ExitCode: 1603},
		// Installed already: choco leaves it and exits 0.
		{Name: "vim", Result: ops.PackageInstalled, Version: "9.1.0"},
	}
	if len(resp.Results) != len(want) {
		t.Fatalf("results = %+v", resp.Results)
	}
	for i, got := range resp.Results {
		out := got.Output
		got.Output = ""
		if got != want[i] {
			t.Errorf("result %d = %+v, want %+v", i, got, want[i])
		}
		switch {
		case want[i].Result == ops.PackageNotFound && !strings.Contains(out, "no-such-package not installed. The package was not found with the source(s) listed."):
			t.Errorf("not-found output = %q", out)
		case want[i].Result == ops.PackageFailed && !strings.Contains(out, "Exit code was '1603'"):
			t.Errorf("failed output = %q", out)
		case want[i].Result == ops.PackageInstalled && out != "":
			t.Errorf("output of an install that worked = %q, want none", out)
		}
	}
	pkgs := ts.State().Chocolatey.Packages
	if pkgs["vim"] != "9.1.0" || pkgs["dotnetfx"] == "" || pkgs["vcredist140"] == "" || pkgs["no-such-package"] != "" || pkgs["broken"] != "" {
		t.Errorf("installed packages = %v", pkgs)
	}
}

// TestChocoPackagesV1 checks the version read back after an install on
// Chocolatey 1.x, whose `list` searches the feed unless told --local-only.
func TestChocoPackagesV1(t *testing.T) {
	ts := simnode.StartTest(t)
	n := ts.Node()
	setInstallVersion(t, n, "1.4.0")
	if err := n.InstallChocolatey(); err != nil {
		t.Fatal(err)
	}
	// An older git than the feed's is installed: choco leaves it, and
	// only the local list tells its version.
	if err := n.Update(func(s *simnode.State) error { s.Chocolatey.Packages["git"] = "2.40.0"; return nil }); err != nil {
		t.Fatal(err)
	}
	resp, err := agent.Call(setupCtx(t), n.OS(), ops.ChocoPackages, ops.ChocoPackagesRequest{Packages: []string{"Git", "vim"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []ops.ChocoPackageResult{
		{Name: "Git", Result: ops.PackageInstalled, Version: "2.40.0"},
		{Name: "vim", Result: ops.PackageInstalled, Version: "9.1.0"},
	}
	if !reflect.DeepEqual(resp.Results, want) {
		t.Errorf("results = %+v, want %+v", resp.Results, want)
	}
}

// TestChocoPackagesRefusesBadIDs: a name that is no package id (it could
// be taken for an option, or was meant for a shell) installs nothing.
func TestChocoPackagesRefusesBadIDs(t *testing.T) {
	for _, bad := range []string{"-y", "--source=https://evil.example/", "vim; Remove-Item C:\\", "", "vim git", strings.Repeat("v", 101)} { // the last: over 100 characters
		t.Run(bad, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			if err := n.InstallChocolatey(); err != nil {
				t.Fatal(err)
			}
			_, err := agent.Call(setupCtx(t), n.OS(), ops.ChocoPackages, ops.ChocoPackagesRequest{Packages: []string{"vim", bad}})
			setupWantFailure(t, err, "bad-request", "not a Chocolatey package id", "nothing was installed")
			if pkgs := ts.State().Chocolatey.Packages; len(pkgs) != 0 {
				t.Errorf("installed %v", pkgs)
			}
		})
	}
}

func TestChocoPackagesTimeLimit(t *testing.T) {
	agent.ShortenSetupLimits(t, agent.SetupLimits{ChocoPackage: time.Nanosecond})
	ts := simnode.StartTest(t)
	n := ts.Node()
	if err := n.InstallChocolatey(); err != nil {
		t.Fatal(err)
	}
	resp, err := agent.Call(setupCtx(t), n.OS(), ops.ChocoPackages, ops.ChocoPackagesRequest{Packages: []string{"vim", "git"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 2 {
		t.Fatalf("results = %+v", resp.Results)
	}
	for _, r := range resp.Results {
		if r.Result != ops.PackageFailed || r.ExitCode != -1 || !strings.Contains(r.Output, "did not finish within") {
			t.Errorf("result = %+v, want failed at its time limit", r)
		}
	}
}

// server2019 makes the node a stock Server 2019: .NET Framework 4.7.2.
func server2019(t *testing.T, n *simnode.Node) {
	t.Helper()
	if err := n.SetRegistryDWord(simnode.KeyNetFx4, "Release", simnode.NetFx472Server2019); err != nil {
		t.Fatal(err)
	}
}

// setInstallVersion picks the Chocolatey version the install script
// installs.
func setInstallVersion(t *testing.T, n *simnode.Node, v string) {
	t.Helper()
	if err := n.Update(func(s *simnode.State) error { s.Chocolatey.InstallVersion = v; return nil }); err != nil {
		t.Fatal(err)
	}
}

// A choco.exe an ordinary user could have put there is never run, and
// its presence does not skip Chocolatey's install: C:\ProgramData lets
// Users create folders, and swdt runs choco.exe as an administrator.
func TestChocoUntrustedIsNeverRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		creator string // who creates C:\ProgramData\chocolatey\choco.exe
		message string
	}{
		{"planted by an ordinary user", "mallory", `C:\ProgramData\chocolatey is owned by mallory, not by Administrators or SYSTEM`},
		{"made by an administrator without the installer's lock-down", "", `C:\ProgramData\chocolatey lets accounts other than Administrators and SYSTEM change it`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
			n := ts.Node()
			creator := n
			if tc.creator != "" {
				var err error
				if creator, err = ts.NodeAs(tc.creator); err != nil {
					t.Fatal(err)
				}
			}
			if err := creator.MkdirAll(`C:\ProgramData\chocolatey`); err != nil {
				t.Fatal(err)
			}
			if err := creator.WriteFile(simnode.PathChoco, []byte("MZ planted choco.exe 2.2.2\r\n")); err != nil {
				t.Fatal(err)
			}
			ctx := setupCtx(t)
			_, err := agent.Call(ctx, n.OS(), ops.ChocoInstall, ops.ChocoInstallRequest{})
			setupWantFailure(t, err, ops.KindUnsafeFolder, tc.message, "nothing was run", "delete C:\\ProgramData\\chocolatey")
			_, err = agent.Call(ctx, n.OS(), ops.ChocoPackages, ops.ChocoPackagesRequest{Packages: []string{"vim"}})
			setupWantFailure(t, err, ops.KindUnsafeFolder, tc.message)
			facts, err := agent.Call(ctx, n.OS(), ops.SetupFacts, ops.SetupFactsRequest{})
			if err != nil || facts.Choco.Version != "" {
				t.Errorf("facts ran the untrusted choco.exe: %+v, %v", facts.Choco, err)
			}
			if c := n.Chocolatey(); len(c.Packages) != 0 {
				t.Errorf("packages were installed by the untrusted choco.exe: %v", c.Packages)
			}
		})
	}
}
