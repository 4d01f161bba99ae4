package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/releasetest"
	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// winsNodeFile writes a node.yaml for ts with a wins section (none when
// winsBinary is empty) and a wins.exe beside it, and returns its path.
func winsNodeFile(t *testing.T, ts *simnode.TestServer, hostname, winsBinary string) string {
	t.Helper()
	dir := t.TempDir()
	c := ts.Credentials()
	if hostname != "" {
		c.Hostname = hostname
	}
	doc := nodeHeader("winworker", c)
	if winsBinary != "" {
		doc += "  wins:\n    sourceURL: ./wins.exe\n    whiteList:\n      processPaths: ['C:\\etc\\rancher\\wins\\agent.exe']\n"
		if err := os.WriteFile(filepath.Join(dir, "wins.exe"), []byte(winsBinary), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return writeNodeFile(t, dir, doc)
}

func decodeWinsJSON(t *testing.T, out string) report.Wins {
	t.Helper()
	got := decodeJSON[report.Wins](t, out)
	if len(got.Nodes) != 1 || got.Nodes[0].Name != "winworker" {
		t.Fatalf("json = %+v", got)
	}
	return got
}

func TestWinsCommandDeployVerifyUninstall(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := winsNodeFile(t, ts, "", "MZ rancher/wins v0.15.1\n")

	// A dry run says would-change, in the words of every dry run, and
	// writes nothing.
	code, out, errOut := run(t, "wins", "-c", file, "--dry-run", "--no-color")
	if fields := strings.Join(strings.Fields(out), " "); code != exitcode.OK || !strings.Contains(fields, "winworker deploy would-change would install; wins.exe would-change; config would be written") {
		t.Errorf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = run(t, "wins", "-c", file, "--deep", "-o", "json", "--settle", "100ms")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if r := decodeJSON[map[string]any](t, out)["nodes"].([]any)[0].(map[string]any)["result"]; r != "changed" {
		t.Errorf("result %v, want changed", r)
	}
	got := decodeWinsJSON(t, out).Nodes[0]
	if got.Deploy == nil || got.Deploy.Action != "installed" {
		t.Errorf("deploy %+v", got.Deploy)
	}
	var names []string
	for _, c := range got.Checks {
		names = append(names, c.Name)
		if !c.OK || c.Result != "passed" {
			t.Errorf("check %+v", c)
		}
	}
	if strings.Join(names, ",") != "service,pipes,get-version,deep" {
		t.Errorf("checks %v", names)
	}
	var raw struct {
		Nodes []struct {
			Deploy map[string]any   `json:"deploy"`
			Checks []map[string]any `json:"checks"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "ok", "detail"} {
		if _, ok := raw.Nodes[0].Checks[0][k]; !ok {
			t.Errorf("check JSON lacks %q: %s", k, out)
		}
	}
	if _, ok := raw.Nodes[0].Deploy["action"]; !ok {
		t.Errorf("deploy JSON lacks action: %s", out)
	}

	code, out, errOut = run(t, "wins", "-c", file, "--no-color", "--settle", "100ms")
	if code != exitcode.OK || !strings.Contains(strings.Join(strings.Fields(out), " "), "winworker deploy unchanged") || !strings.Contains(errOut, "wins deployed on 1 node(s)") {
		t.Errorf("re-run: exit %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = run(t, "wins", "verify", "-c", file, "--deep", "--no-color")
	if code != exitcode.OK || strings.Count(out, " passed ") != 4 {
		t.Errorf("verify: exit %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = run(t, "wins", "uninstall", "-c", file, "-o", "json")
	if code != exitcode.OK {
		t.Fatalf("uninstall: exit %d\n%s", code, errOut)
	}
	if u := decodeWinsJSON(t, out).Nodes[0].Uninstall; u == nil || !u.ServiceRemoved {
		t.Errorf("uninstall %+v", u)
	}
	if r := decodeJSON[map[string]any](t, out)["nodes"].([]any)[0].(map[string]any)["result"]; r != "changed" {
		t.Errorf("uninstall result %v, want changed", r)
	}
	sim := ts.Node()
	if _, err := sim.Service(ops.WinsService); err == nil || sim.Exists(`C:\etc\rancher\wins\wins.exe`) {
		t.Error("uninstall left the service or the binary")
	}

	// Verify now fails: exit 3, the reason on stderr.
	code, _, errOut = run(t, "wins", "verify", "-c", file)
	if code != exitcode.Partial || !strings.Contains(errOut, "not registered") {
		t.Errorf("verify after uninstall: exit %d\n%s", code, errOut)
	}
}

// A swap from wins v0.15 to v0.16, which runs without the pipes, is
// rolled back as soon as wins has run a moment without them, not after
// the health timeout (an hour here).
func TestWinsV016DetectedAtOnce(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := winsNodeFile(t, ts, "", "MZ rancher/wins v0.15.1\n")
	if code, _, errOut := run(t, "wins", "-c", file, "--no-color", "--settle", "100ms"); code != exitcode.OK {
		t.Fatalf("v0.15: exit %d\n%s", code, errOut)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(file), "wins.exe"), []byte("MZ wins v0.16.0 "+simnode.MarkerWinsNoPipe), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "wins", "-c", file, "--no-color", "--settle", "100ms", "--health-timeout", "1h")
	if code != exitcode.Partial || !strings.Contains(errOut, "although the service has been Running for") || !strings.Contains(errOut, "use wins v0.15.x or earlier") {
		t.Errorf("v0.16: exit %d, want %d and the missing pipe\n%s", code, exitcode.Partial, errOut)
	}
	if b, _ := ts.Node().ReadFile(`C:\etc\rancher\wins\wins.exe`); string(b) != "MZ rancher/wins v0.15.1\n" {
		t.Errorf("v0.16 was not rolled back: %q", b)
	}
}

func TestWinsCommandExitCodes(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	tests := []struct {
		name     string
		hostname string
		binary   string
		args     []string
		code     int
		stderr   []string
	}{
		{name: "wins without the bridge", binary: "MZ wins v0.16.0 " + simnode.MarkerWinsNoPipe, code: exitcode.Partial,
			stderr: []string{"check pipes", "v0.16 and later removed the named-pipe bridge", "use wins v0.15.x or earlier"}},
		{name: "no spec.wins", code: exitcode.Usage, stderr: []string{"has no spec.wins", "see the wins section of 'swdt config init'"}},
		{name: "unreachable node", hostname: "127.0.0.1:1", binary: "MZ wins", code: exitcode.Failure, stderr: []string{"winworker"}},
		{name: "unknown subcommand", binary: "MZ wins", args: []string{"verfy"}, code: exitcode.Usage, stderr: []string{`did you mean "verify"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := winsNodeFile(t, ts, tt.hostname, tt.binary)
			code, _, errOut := run(t, append([]string{"wins", "-c", file, "--no-color", "--settle", "100ms"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, errOut)
			}
			for _, s := range tt.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut)
				}
			}
		})
	}
}

// With one node unreachable and a check failing on the other, the error
// names both, not only the unreachable node (exit 3).
func TestWinsCommandReportsEveryFailure(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	good := winsNodeFile(t, ts, "", "MZ wins v0.16.0 "+simnode.MarkerWinsNoPipe)
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	gone := ts.Credentials()
	gone.Hostname = sshdtest.ClosedPort(t)
	doc := string(raw) + "---\n" + nodeHeader("offline", gone) + "  wins:\n    sourceURL: ./wins.exe\n"
	if err := os.WriteFile(good, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "wins", "-c", good, "--no-color", "--settle", "100ms")
	if code != exitcode.Partial {
		t.Errorf("exit %d, want %d\n%s", code, exitcode.Partial, errOut)
	}
	for _, want := range []string{"node offline: ", "node winworker: check pipes", "v0.16 and later removed the named-pipe bridge"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// release:wins takes wins.exe from rancher/wins' release (here a mirror
// on loopback), the last with the bridge unless the node file says
// otherwise, checked against the release's sha256.txt.
func TestWinsFromRelease(t *testing.T) {
	srv := releasetest.Start(t)
	srv.Mirror(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	srv.Wins(v1alpha1.DefaultWinsRelease, []byte("MZ rancher/wins "+v1alpha1.DefaultWinsRelease+"\n"), true)
	ts := simnode.StartTest(t)
	file := writeNodeFile(t, t.TempDir(), nodeHeader("winworker", ts.Credentials())+"  wins:\n    sourceURL: release:wins\n")
	code, out, errOut := run(t, "wins", "-c", file, "-o", "json", "--settle", "100ms")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if got := decodeWinsJSON(t, out).Nodes[0]; got.Deploy == nil || got.Deploy.Action != "installed" {
		t.Errorf("deploy %+v", got.Deploy)
	}
	if b, err := ts.Node().ReadFile(v1alpha1.DefaultWinsDestination); err != nil || !strings.Contains(string(b), v1alpha1.DefaultWinsRelease) {
		t.Errorf("wins.exe on the node: %q, %v", b, err)
	}
}
