package simnode

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/pwsh"
	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

func setupCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSetupFactsFreshNode(t *testing.T) {
	ts := StartTest(t, WithAccount(Account{Name: "developer"}))
	ctx := setupCtx(t)
	tests := []struct {
		user    string
		isAdmin bool
	}{
		{"Administrator", true},
		{"developer", false},
	}
	for _, tc := range tests {
		t.Run(tc.user, func(t *testing.T) {
			r := &pwsh.Runner{Exec: ts.ExecerAs(tc.user)}
			facts, err := pwsh.Call(ctx, r, ops.SetupFacts, ops.SetupFactsRequest{FirewallRules: append(ops.RDPFirewallRules, "No-Such-Rule")})
			if err != nil {
				t.Fatal(err)
			}
			if facts.Node.IsAdmin != tc.isAdmin || facts.Node.Username != `WIN-SIMNODE01\`+tc.user {
				t.Errorf("node = %+v", facts.Node)
			}
			if facts.RDP.Enabled || !facts.RDP.NLA {
				t.Errorf("rdp = %+v, want disabled with NLA", facts.RDP)
			}
			want := []ops.FirewallRule{
				{Name: "RemoteDesktop-UserMode-In-TCP", Exists: true},
				{Name: "RemoteDesktop-UserMode-In-UDP", Exists: true},
				{Name: "No-Such-Rule"},
			}
			if len(facts.RDP.FirewallRules) != len(want) {
				t.Fatalf("rules = %+v", facts.RDP.FirewallRules)
			}
			for i, r := range facts.RDP.FirewallRules {
				if r != want[i] {
					t.Errorf("rule %d = %+v, want %+v", i, r, want[i])
				}
			}
			if facts.Choco.Installed || facts.Choco.Version != "" || len(facts.Choco.Packages) != 0 {
				t.Errorf("choco = %+v, want absent", facts.Choco)
			}
			if facts.AuthorizedKeys.Exists || len(facts.AuthorizedKeys.Keys) != 0 {
				t.Errorf("authorized keys = %+v, want absent", facts.AuthorizedKeys)
			}
		})
	}
}

func TestSetupFactsHidesAuthorizedKeysFromNonAdmins(t *testing.T) {
	ts := StartTest(t, WithAccount(Account{Name: "developer"}))
	if err := ts.Node().WriteFile(PathAdminAuthorizedKeys, []byte("ssh-ed25519 AAAA a\r\n")); err != nil {
		t.Fatal(err)
	}
	ctx := setupCtx(t)
	for user, wantExists := range map[string]bool{"Administrator": true, "developer": false} {
		facts, err := pwsh.Call(ctx, &pwsh.Runner{Exec: ts.ExecerAs(user)}, ops.SetupFacts, ops.SetupFactsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if facts.AuthorizedKeys.Exists != wantExists {
			t.Errorf("%s: authorized keys exist = %v, want %v", user, facts.AuthorizedKeys.Exists, wantExists)
		}
	}
}

func TestRDPSet(t *testing.T) {
	ts := StartTest(t)
	ctx := setupCtx(t)
	r := &pwsh.Runner{Exec: ts.Execer()}
	for _, enable := range []bool{true, false, true} {
		st, err := pwsh.Call(ctx, r, ops.RDPSet, ops.RDPSetRequest{Enable: enable, FirewallRules: ops.RDPFirewallRules})
		if err != nil {
			t.Fatal(err)
		}
		if st.Enabled != enable || len(st.FirewallRules) != 2 {
			t.Fatalf("enable=%v: state %+v", enable, st)
		}
		for _, rule := range st.FirewallRules {
			if !rule.Exists || rule.Enabled != enable {
				t.Errorf("enable=%v: rule %+v", enable, rule)
			}
			if got, _ := ts.Node().FirewallRule(rule.Name); got.Enabled != enable {
				t.Errorf("enable=%v: node's rule %s enabled = %v", enable, rule.Name, got.Enabled)
			}
		}
		deny, _ := ts.Node().RegistryValue(KeyTerminalServer, "fDenyTSConnections")
		if (deny.Number == 0) != enable {
			t.Errorf("enable=%v: fDenyTSConnections = %d", enable, deny.Number)
		}
	}
	if shadow, _ := ts.Node().FirewallRule("RemoteDesktop-Shadow-In-TCP"); shadow.Enabled {
		t.Error("a rule that was not named was enabled")
	}

	_, err := pwsh.Call(ctx, r, ops.RDPSet, ops.RDPSetRequest{Enable: true, FirewallRules: []string{"No-Such-Rule"}})
	var opErr *pwsh.OpError
	if !errors.As(err, &opErr) || opErr.Kind != "not-found" || !strings.Contains(opErr.Message, "No-Such-Rule") {
		t.Errorf("unknown rule: err = %v, want not-found naming the rule", err)
	}
}

func TestChocoInstall(t *testing.T) {
	tests := []struct {
		name        string
		faults      Faults
		wantKind    string
		wantMessage []string
	}{
		{name: "installs"},
		{name: "download fails", faults: Faults{ChocoDownloadFails: true}, wantKind: "download-failed",
			wantMessage: []string{"could not download", chocoInstallScriptURL, "The remote name could not be resolved", "internet access"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := StartTest(t, WithFaults(tc.faults))
			ctx := setupCtx(t)
			r := &pwsh.Runner{Exec: ts.Execer()}
			st, err := pwsh.Call(ctx, r, ops.ChocoInstall, ops.ChocoInstallRequest{})
			if tc.wantKind != "" {
				var opErr *pwsh.OpError
				if !errors.As(err, &opErr) || opErr.Kind != tc.wantKind {
					t.Fatalf("err = %v, want kind %s", err, tc.wantKind)
				}
				for _, w := range tc.wantMessage {
					if !strings.Contains(opErr.Message, w) {
						t.Errorf("message %q lacks %q", opErr.Message, w)
					}
				}
				if ts.State().Chocolatey.Installed || ts.Node().Exists(PathChoco) {
					t.Error("Chocolatey installed although the download failed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !st.Installed || st.Version != "2.2.2" || !ts.Node().Exists(PathChoco) {
				t.Errorf("state = %+v, choco.exe exists = %v", st, ts.Node().Exists(PathChoco))
			}
			// A second install leaves it as it is.
			if st2, err := pwsh.Call(ctx, r, ops.ChocoInstall, ops.ChocoInstallRequest{}); err != nil || st2.Version != "2.2.2" {
				t.Errorf("second install: %+v, %v", st2, err)
			}
		})
	}
}

func TestChocoPackages(t *testing.T) {
	ts := StartTest(t)
	ctx := setupCtx(t)
	r := &pwsh.Runner{Exec: ts.Execer()}

	_, err := pwsh.Call(ctx, r, ops.ChocoPackages, ops.ChocoPackagesRequest{Packages: []string{"vim"}})
	var opErr *pwsh.OpError
	if !errors.As(err, &opErr) || opErr.Kind != "not-found" || !strings.Contains(opErr.Message, "Chocolatey is not installed") {
		t.Fatalf("without Chocolatey: err = %v", err)
	}
	if err := ts.Node().InstallChocolatey(); err != nil {
		t.Fatal(err)
	}
	resp, err := pwsh.Call(ctx, r, ops.ChocoPackages, ops.ChocoPackagesRequest{Packages: []string{"vim", "no-such-package", "dotnetfx", "vcredist140"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []ops.ChocoPackageResult{
		{Name: "vim", Result: ops.PackageInstalled, Version: "9.1.0"},
		{Name: "no-such-package", Result: ops.PackageNotFound, ExitCode: 1},
		{Name: "dotnetfx", Result: ops.PackageInstalled, ExitCode: 3010, RebootRequired: true, Version: "4.8.0.20220524"},
		{Name: "vcredist140", Result: ops.PackageInstalled, ExitCode: 1641, RebootRequired: true, Version: "14.38.33135"},
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
		if want[i].Result == ops.PackageNotFound && !strings.Contains(out, "no-such-package not installed. The package was not found with the source(s) listed.") {
			t.Errorf("not-found output = %q", out)
		}
	}
	pkgs := ts.State().Chocolatey.Packages
	if pkgs["vim"] != "9.1.0" || pkgs["dotnetfx"] == "" || pkgs["vcredist140"] == "" || pkgs["no-such-package"] != "" {
		t.Errorf("installed packages = %v", pkgs)
	}
}

func TestAuthorizedKeysAdd(t *testing.T) {
	const (
		keyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA a@laptop"
		keyB = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB b@laptop"
	)
	tests := []struct {
		name      string
		existing  string // "" means no file
		keys      []string
		wantAdded int
		wantKeys  []string
		wantFile  string
	}{
		{name: "new file", keys: []string{keyA, keyB}, wantAdded: 2, wantKeys: []string{keyA, keyB},
			wantFile: keyA + "\r\n" + keyB + "\r\n"},
		{name: "keeps existing lines and comments", existing: "# team keys\r\n" + keyA + "\r\n", keys: []string{keyA, keyB},
			wantAdded: 1, wantKeys: []string{keyA, keyB}, wantFile: "# team keys\r\n" + keyA + "\r\n" + keyB + "\r\n"},
		{name: "no final newline", existing: keyA, keys: []string{keyB}, wantAdded: 1, wantKeys: []string{keyA, keyB},
			wantFile: keyA + "\r\n" + keyB + "\r\n"},
		{name: "nothing missing", existing: keyA + "\n", keys: []string{"  " + keyA + "  "}, wantKeys: []string{keyA},
			wantFile: keyA + "\n"},
		// Keys are base64: one differing only in case is another key
		// (the op compares with -ccontains, not -contains).
		{name: "case matters", existing: keyA + "\r\n", keys: []string{strings.ToUpper(keyA)}, wantAdded: 1,
			wantKeys: []string{keyA, strings.ToUpper(keyA)}, wantFile: keyA + "\r\n" + strings.ToUpper(keyA) + "\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := StartTest(t)
			n := ts.Node()
			if tc.existing != "" {
				if err := n.WriteFile(PathAdminAuthorizedKeys, []byte(tc.existing)); err != nil {
					t.Fatal(err)
				}
				// A hand-made file that inherits Users' read access.
				if err := n.SetACL(PathAdminAuthorizedKeys, &ACL{Entries: []ACE{{Identity: `BUILTIN\Users`, Rights: "RX"}}}); err != nil {
					t.Fatal(err)
				}
			}
			st, err := pwsh.Call(setupCtx(t), &pwsh.Runner{Exec: ts.Execer()}, ops.AuthorizedKeysAdd, ops.AuthorizedKeysAddRequest{Keys: tc.keys})
			if err != nil {
				t.Fatal(err)
			}
			if st.Added != tc.wantAdded || !st.Exists || !st.ACLOK || strings.Join(st.Keys, "\n") != strings.Join(tc.wantKeys, "\n") {
				t.Errorf("state = %+v", st)
			}
			raw, err := n.ReadFile(PathAdminAuthorizedKeys)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != tc.wantFile {
				t.Errorf("file = %q, want %q", raw, tc.wantFile)
			}
			acl, _ := n.ACL(PathAdminAuthorizedKeys)
			if !AdminOnlyACL(acl) {
				t.Errorf("ACL = %+v, want Administrators and SYSTEM only", acl)
			}
		})
	}
}

func TestAuthorizedKeysAddRefusesNonAdmin(t *testing.T) {
	ts := StartTest(t, WithAccount(Account{Name: "developer"}))
	_, err := pwsh.Call(setupCtx(t), &pwsh.Runner{Exec: ts.ExecerAs("developer")}, ops.AuthorizedKeysAdd, ops.AuthorizedKeysAddRequest{Keys: []string{"ssh-ed25519 AAAA x"}})
	if err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("err = %v, want access denied", err)
	}
	if ts.Node().Exists(PathAdminAuthorizedKeys) {
		t.Error("a non-administrator wrote administrators_authorized_keys")
	}
}
