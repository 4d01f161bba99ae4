package agent_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// setupCtx bounds one setup test.
func setupCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// setupOSAs is the simulated Windows layer as the account user sees it.
func setupOSAs(t *testing.T, ts *simnode.TestServer, user string) winos.OS {
	t.Helper()
	n, err := ts.NodeAs(user)
	if err != nil {
		t.Fatal(err)
	}
	return n.OS()
}

func TestNodeFacts(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "developer"}))
	tests := []struct {
		user    string
		isAdmin bool
	}{
		{"Administrator", true},
		{"developer", false},
	}
	for _, tc := range tests {
		t.Run(tc.user, func(t *testing.T) {
			facts, err := agent.Call(setupCtx(t), setupOSAs(t, ts, tc.user), ops.NodeFacts, ops.NodeFactsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			want := ops.NodeFactsResponse{
				Hostname: "WIN-SIMNODE01", ProductName: "Windows Server 2022 Datacenter", DisplayVersion: "21H2",
				CurrentBuild: "20348", UBR: 2227, Username: `WIN-SIMNODE01\` + tc.user, IsAdmin: tc.isAdmin, PSVersion: "5.1.20348.1",
				Arch: "amd64",
			}
			if facts != want {
				t.Errorf("facts = %+v\nwant    %+v", facts, want)
			}
		})
	}
}

// The architecture is the machine's, and an ARM64 machine has the
// folder swdt looks for before any agent runs: the two agree.
func TestNodeFactsArch(t *testing.T) {
	t.Parallel()
	for _, arch := range []string{"arm64", "amd64"} {
		t.Run(arch, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			if err := n.SetArch(arch); err != nil {
				t.Fatal(err)
			}
			facts, err := agent.Call(setupCtx(t), n.OS(), ops.NodeFacts, ops.NodeFactsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			inspect, err := agent.Call(setupCtx(t), n.OS(), ops.ProvisionInspect, ops.ProvisionInspectRequest{})
			if err != nil {
				t.Fatal(err)
			}
			fi, serr := n.OS().Stat(simnode.ARM32Folder)
			if facts.Arch != arch || inspect.Arch != arch || (serr == nil && fi.IsDir) != (arch == "arm64") {
				t.Errorf("facts say %q, inspect %q, %s exists: %v; want %s", facts.Arch, inspect.Arch, simnode.ARM32Folder, serr == nil, arch)
			}
		})
	}
}

func TestNodeFactsReadTheRegistry(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	// A Server 2019 image: a newer UBR, no DisplayVersion, no PowerShell
	// engine key (a trimmed image).
	if err := n.SetRegistryDWord(simnode.KeyCurrentVersion, "UBR", 2340); err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct{ key, name string }{
		{simnode.KeyCurrentVersion, "DisplayVersion"},
		{simnode.KeyPowerShellEngine, "PowerShellVersion"},
	} {
		if err := n.DeleteRegistryValue(v.key, v.name); err != nil {
			t.Fatal(err)
		}
	}
	facts, err := agent.Call(setupCtx(t), n.OS(), ops.NodeFacts, ops.NodeFactsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if facts.UBR != 2340 || facts.DisplayVersion != "" || facts.PSVersion != "" || facts.CurrentBuild != "20348" {
		t.Errorf("facts = %+v, want UBR 2340 and empty DisplayVersion and PSVersion", facts)
	}
}

func TestSetupFactsFreshNode(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "developer"}))
	tests := []struct {
		user    string
		isAdmin bool
	}{
		{"Administrator", true},
		{"developer", false},
	}
	for _, tc := range tests {
		t.Run(tc.user, func(t *testing.T) {
			req := ops.SetupFactsRequest{FirewallRules: append(append([]string(nil), ops.RDPFirewallRules...), "No-Such-Rule")}
			facts, err := agent.Call(setupCtx(t), setupOSAs(t, ts, tc.user), ops.SetupFacts, req)
			if err != nil {
				t.Fatal(err)
			}
			if facts.Node.IsAdmin != tc.isAdmin || facts.Node.Username != `WIN-SIMNODE01\`+tc.user || facts.Node.CurrentBuild != "20348" {
				t.Errorf("node = %+v", facts.Node)
			}
			if facts.RDP.Enabled || !facts.RDP.NLA || facts.RDP.BlockedByPolicy || facts.RDP.Message != "" {
				t.Errorf("rdp = %+v, want disabled with NLA, no policy", facts.RDP)
			}
			want := []ops.FirewallRule{
				{Name: "RemoteDesktop-UserMode-In-TCP", Exists: true},
				{Name: "RemoteDesktop-UserMode-In-UDP", Exists: true},
				{Name: "No-Such-Rule"},
			}
			if !reflect.DeepEqual(facts.RDP.FirewallRules, want) {
				t.Errorf("rules = %+v, want %+v", facts.RDP.FirewallRules, want)
			}
			if facts.Choco.Installed || facts.Choco.Version != "" || facts.Choco.Packages == nil || len(facts.Choco.Packages) != 0 {
				t.Errorf("choco = %+v, want absent with an empty list", facts.Choco)
			}
			if facts.AuthorizedKeys.Exists || facts.AuthorizedKeys.Keys == nil || len(facts.AuthorizedKeys.Keys) != 0 {
				t.Errorf("authorized keys = %+v, want absent with an empty list", facts.AuthorizedKeys)
			}
		})
	}
}

func TestSetupFactsHidesAuthorizedKeysFromNonAdmins(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "developer"}))
	if err := ts.Node().WriteFile(simnode.PathAdminAuthorizedKeys, []byte("ssh-ed25519 AAAA a\r\n")); err != nil {
		t.Fatal(err)
	}
	for user, wantExists := range map[string]bool{"Administrator": true, "developer": false} {
		facts, err := agent.Call(setupCtx(t), setupOSAs(t, ts, user), ops.SetupFacts, ops.SetupFactsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if facts.AuthorizedKeys.Exists != wantExists {
			t.Errorf("%s: authorized keys exist = %v, want %v", user, facts.AuthorizedKeys.Exists, wantExists)
		}
	}
}

func TestSetupFactsAuthorizedKeys(t *testing.T) {
	t.Parallel()
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA renée@portátil"
	tests := []struct {
		name     string
		content  []byte
		acl      *simnode.ACL
		encoding string
		aclOK    bool
	}{
		{name: "utf-8, admin-only", content: []byte("# team\r\n" + key + "\r\n"),
			acl:      &simnode.ACL{InheritanceDisabled: true, Entries: []simnode.ACE{{Identity: `BUILTIN\Administrators`, Rights: "F"}, {Identity: `NT AUTHORITY\SYSTEM`, Rights: "F"}}},
			encoding: ops.EncodingUTF8, aclOK: true},
		{name: "inherited ACL", content: []byte(key + "\n"), encoding: ops.EncodingUTF8},
		{name: "utf-8 with BOM", content: append([]byte{0xEF, 0xBB, 0xBF}, key+"\r\n"...), encoding: ops.EncodingUTF8BOM},
		{name: "utf-16le", content: setupUTF16("\ufeff"+key+"\r\n", false), encoding: ops.EncodingUTF16LE},
		{name: "utf-16be without BOM", content: setupUTF16(key+"\r\n", true), encoding: ops.EncodingUTF16BE},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			if err := n.WriteFile(simnode.PathAdminAuthorizedKeys, tc.content); err != nil {
				t.Fatal(err)
			}
			if err := n.SetACL(simnode.PathAdminAuthorizedKeys, tc.acl); err != nil {
				t.Fatal(err)
			}
			facts, err := agent.Call(setupCtx(t), n.OS(), ops.SetupFacts, ops.SetupFactsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			got := facts.AuthorizedKeys
			if !got.Exists || got.Encoding != tc.encoding || got.ACLOK != tc.aclOK || !reflect.DeepEqual(got.Keys, []string{key}) {
				t.Errorf("authorized keys = %+v, want encoding %s, aclOk %v, keys [%s]", got, tc.encoding, tc.aclOK, key)
			}
		})
	}
}

func TestSetupFactsChocolatey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		version string
	}{
		{name: "v2 lists local packages by default", version: "2.2.2"},
		{name: "v1 needs --local-only", version: "1.4.0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			if err := n.Update(func(s *simnode.State) error { s.Chocolatey.InstallVersion = tc.version; return nil }); err != nil {
				t.Fatal(err)
			}
			if err := n.InstallChocolatey(); err != nil {
				t.Fatal(err)
			}
			if _, err := n.ChocoInstall("vim"); err != nil {
				t.Fatal(err)
			}
			facts, err := agent.Call(setupCtx(t), n.OS(), ops.SetupFacts, ops.SetupFactsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			// v1's list without --local-only would list the whole feed.
			want := []ops.ChocoPackage{{Name: "chocolatey", Version: tc.version}, {Name: "vim", Version: "9.1.0"}}
			if !facts.Choco.Installed || facts.Choco.Version != tc.version || !reflect.DeepEqual(facts.Choco.Packages, want) {
				t.Errorf("choco = %+v, want %s with %+v", facts.Choco, tc.version, want)
			}
		})
	}
}

func TestSetupFactsRefusesWildcardRuleNames(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	_, err := agent.Call(setupCtx(t), ts.Node().OS(), ops.SetupFacts, ops.SetupFactsRequest{FirewallRules: []string{"RemoteDesktop-*"}})
	setupWantFailure(t, err, "bad-request", "RemoteDesktop-*")
}

// setupUTF16 encodes s as UTF-16, little-endian unless big.
func setupUTF16(s string, big bool) []byte {
	var out []byte
	for _, r := range s {
		units := []rune{r}
		if r > 0xFFFF {
			r -= 0x10000
			units = []rune{0xD800 + (r >> 10), 0xDC00 + (r & 0x3FF)}
		}
		for _, u := range units {
			if big {
				out = append(out, byte(u>>8), byte(u))
			} else {
				out = append(out, byte(u), byte(u>>8))
			}
		}
	}
	return out
}

// setupWantFailure checks that err is the agent's failure of kind whose
// message holds every one of parts.
func setupWantFailure(t *testing.T, err error, kind ops.Kind, parts ...string) {
	t.Helper()
	var f *agent.Failure
	if !errors.As(err, &f) || f.Kind != kind {
		t.Fatalf("err = %v, want a %s failure", err, kind)
	}
	for _, p := range parts {
		if !strings.Contains(f.Message, p) {
			t.Errorf("message %q lacks %q", f.Message, p)
		}
	}
}
