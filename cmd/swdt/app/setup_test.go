package app

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// setupNodeFile writes a node.yaml for ts (logging in as user) with the
// given setup section, and returns its path.
func setupNodeFile(t *testing.T, ts *simnode.TestServer, user, setupYAML string) string {
	t.Helper()
	c := ts.CredentialsFor(user)
	doc := nodeHeader("winworker", c) + "  setup:\n" + setupYAML
	return writeNodeFile(t, t.TempDir(), doc)
}

func TestSetupCommandFreshThenRerun(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := setupNodeFile(t, ts, "Administrator", fmt.Sprintf("    chocoPackages: [vim, grep]\n    authorizedKeys: [%q]\n", ts.PublicKeyFile))

	code, out, errOut := run(t, "setup", "-c", file, "-o", "json")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	got := decodeJSON[report.Setup](t, out)
	if len(got.Nodes) != 1 || got.Nodes[0].Name != "winworker" || len(got.Nodes[0].Steps) != 5 {
		t.Fatalf("json = %+v", got)
	}
	for _, s := range got.Nodes[0].Steps {
		if s.Result != "changed" {
			t.Errorf("first run: %s = %s (%s)", s.Name, s.Result, s.Detail)
		}
	}
	var raw struct {
		Kind  string           `json:"kind"`
		Nodes []map[string]any `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Kind != "SetupReport" {
		t.Errorf("kind = %q", raw.Kind)
	}
	for _, k := range []string{"name", "result", "detail"} {
		if _, ok := raw.Nodes[0]["steps"].([]any)[0].(map[string]any)[k]; !ok {
			t.Errorf("step JSON lacks %q: %s", k, out)
		}
	}

	// -vv logs every op sent: the re-run must send setup-facts only.
	code, out, errOut = run(t, "setup", "-c", file, "--no-color", "-vv")
	if code != exitcode.OK {
		t.Fatalf("re-run: exit %d\n%s", code, errOut)
	}
	for _, line := range strings.Split(out, "\n")[1:] {
		if line != "" && !strings.Contains(line, " unchanged ") {
			t.Errorf("re-run row is not unchanged: %q", line)
		}
	}
	if !strings.HasPrefix(out, "NODE       STEP") {
		t.Errorf("table = %q", out)
	}
	if n := strings.Count(errOut, "msg=\"run op\""); n != 1 || !strings.Contains(errOut, "op=setup-facts") {
		t.Errorf("re-run sent %d ops, want setup-facts only:\n%s", n, errOut)
	}
	if !strings.Contains(errOut, "plan: nothing to change") {
		t.Errorf("stderr = %s", errOut)
	}
}

func TestSetupCommandFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		opts       []simnode.TestOption
		user       string
		setup      string
		unreach    bool
		wantCode   int
		wantStderr []string
		wantStdout []string
	}{
		{
			name: "chocolatey download fails", opts: []simnode.TestOption{simnode.WithFaults(simnode.Faults{ChocoDownloadFails: true})},
			setup: "    chocoPackages: [vim]\n", wantCode: exitcode.Partial,
			wantStdout: []string{"chocolatey   failed", "The remote name could not be resolved", "package vim  failed", "Chocolatey is missing"},
			wantStderr: []string{"node winworker: setup failed for 2 step(s): chocolatey, package vim"},
		},
		{
			name: "unknown package", setup: "    chocoPackages: [vim, no-such-package]\n", wantCode: exitcode.Partial,
			wantStdout: []string{"package vim              changed", "package no-such-package  failed", "was not found on the Chocolatey feed"},
			wantStderr: []string{"node winworker: setup failed for 1 step(s): package no-such-package"},
		},
		{
			name: "non-admin user", opts: []simnode.TestOption{simnode.WithAccount(simnode.Account{Name: "developer"})},
			user: "developer", setup: "    chocoPackages: [vim]\n", wantCode: exitcode.Failure,
			wantStdout: []string{"winworker  -     failed"},
			wantStderr: []string{`is not an administrator on node winworker`, "spec.credentials.username"},
		},
		{
			name: "unreachable node", unreach: true, setup: "    enableRDP: true\n", wantCode: exitcode.Failure,
			wantStderr: []string{"cannot reach ssh server at 127.0.0.1:", "check that the node is running"},
		},
		{
			name: "bad public key file", setup: "    authorizedKeys: [%KEY%]\n", wantCode: exitcode.Usage,
			wantStderr: []string{"spec.setup.authorizedKeys[0]", "is a private key"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t, tc.opts...)
			user := tc.user
			if user == "" {
				user = "Administrator"
			}
			setupYAML := strings.ReplaceAll(tc.setup, "%KEY%", fmt.Sprintf("%q", ts.KeyFile))
			file := setupNodeFile(t, ts, user, setupYAML)
			if tc.unreach {
				raw, _ := os.ReadFile(file)
				if err := os.WriteFile(file, []byte(strings.Replace(string(raw), ts.Addr(), sshdtest.ClosedPort(t), 1)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := run(t, "setup", "-c", file, "--no-color")
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, errOut)
			}
			for _, w := range tc.wantStdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantStderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

func TestSetupCommandDryRunAndRDPOff(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	on := setupNodeFile(t, ts, "Administrator", "    enableRDP: true\n")
	code, out, errOut := run(t, "setup", "-c", on, "--dry-run", "-o", "json")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if got := decodeJSON[report.Setup](t, out); got.Nodes[0].Steps[0].Result != "would-change" {
		t.Errorf("dry run = %+v", got)
	}
	if ts.State().Firewall["remotedesktop-usermode-in-tcp"].Enabled {
		t.Fatal("dry run changed the node")
	}
	if code, _, errOut := run(t, "setup", "-c", on); code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	off := setupNodeFile(t, ts, "Administrator", "    enableRDP: false\n")
	code, out, errOut = run(t, "setup", "-c", off, "--no-color")
	if code != exitcode.OK || !strings.Contains(out, "rdp   changed  now off") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	st := ts.State()
	if v := st.Registry[strings.ToLower(simnode.KeyTerminalServer)].Values["fdenytsconnections"].Number; v != 1 {
		t.Errorf("fDenyTSConnections = %d, want 1", v)
	}
	if st.Firewall["remotedesktop-usermode-in-tcp"].Enabled || st.Firewall["remotedesktop-usermode-in-udp"].Enabled {
		t.Error("RDP firewall rules still enabled")
	}
}

// A node that needs a reboot is named even when another node of the file
// could not be reached (the run is partial, not silent about the reboot).
func TestSetupRebootWarningWithAnUnreachableNode(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := setupNodeFile(t, ts, "Administrator", "    chocoPackages: [dotnetfx]\n")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	gone := ts.Credentials()
	gone.Hostname = sshdtest.ClosedPort(t)
	doc := string(raw) + "---\n" + nodeHeader("offline", gone)
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "setup", "-c", file, "--no-color")
	if code != exitcode.Partial {
		t.Errorf("exit %d, want %d\n%s", code, exitcode.Partial, errOut)
	}
	for _, want := range []string{"node winworker needs a reboot to finish: package dotnetfx", "node offline: "} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}
