package app

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// statusFile writes a node.yaml for ts whose kubelet provisioner comes
// from a local kubelet.exe (content) and whose containerd has no local
// build, and returns its path.
func statusFile(t *testing.T, ts *simnode.TestServer, hostname, content string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubelet.exe"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	c := ts.Credentials()
	if hostname != "" {
		c.Hostname = hostname
	}
	doc := nodeHeader("winworker", c) + `  kubernetes:
    provisioners:
    - name: kubelet
      sourceURL: ./kubelet.exe
      destination: 'C:\k\kubelet.exe'
    - name: containerd
      sourceURL: ./not-built.exe
      destination: 'C:\Program Files\containerd\containerd.exe'
`
	return writeNodeFile(t, dir, doc)
}

func statusSources(t *testing.T, out string) map[string]string {
	t.Helper()
	var doc struct {
		Nodes []struct {
			Name     string                    `json:"name"`
			Node     struct{ Hostname string } `json:"node"`
			Binaries []struct {
				Name, Status, Source string
				PID                  int
			} `json:"binaries"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Nodes) != 1 {
		t.Fatalf("bad JSON (%v):\n%s", err, out)
	}
	got := map[string]string{"hostname": doc.Nodes[0].Node.Hostname}
	for _, b := range doc.Nodes[0].Binaries {
		got[b.Name] = b.Status + "/" + b.Source
	}
	return got
}

func TestStatus(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ts := simnode.StartTest(t)
	file := statusFile(t, ts, "", "MZ kubelet built here\n")
	before := ts.State()

	code, out, errOut := run(t, "status", "-c", file, "-o", "json")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	want := map[string]string{"hostname": "WIN-SIMNODE01", "kubelet": "Running/differs", "containerd": "Running/no-local-build"}
	if got := statusSources(t, out); !maps.Equal(got, want) {
		t.Errorf("status = %v, want %v", got, want)
	}
	if r := decodeJSON[map[string]any](t, out)["nodes"].([]any)[0].(map[string]any)["result"]; r != report.OutOfSync {
		t.Errorf("result %v, want %s: kubelet differs", r, report.OutOfSync)
	}
	// The missing local build is a warning, with its line: status does
	// not need it.
	notBuilt := filepath.Join(filepath.Dir(file), "not-built.exe")
	if !strings.Contains(errOut, "spec.kubernetes.provisioners[1].sourceURL: source "+notBuilt+" does not exist") {
		t.Errorf("no warning about %s:\n%s", notBuilt, errOut)
	}
	after := ts.State()
	for name, svc := range before.Services {
		if a := after.Services[name]; a.PID != svc.PID || a.Status != svc.Status {
			t.Errorf("status touched service %s: %+v -> %+v", name, svc, a)
		}
	}

	if code, _, errOut := run(t, "kubernetes", "-c", file, "--only", "kubelet", "--settle", "0"); code != exitcode.OK {
		t.Fatalf("kubernetes: exit %d\n%s", code, errOut)
	}
	code, out, errOut = run(t, "status", "-c", file, "--no-color")
	if code != exitcode.OK || !strings.Contains(out, "in-sync") || !strings.Contains(errOut, "WIN-SIMNODE01 (Windows Server 2022 Datacenter 21H2, build 20348.") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestStatusUnreachable(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := statusFile(t, ts, sshdtest.ClosedPort(t), "MZ")
	code, out, errOut := run(t, "status", "-c", file, "--no-color")
	if code != exitcode.Failure || !strings.Contains(out, "unreachable") || !strings.Contains(errOut, "cannot reach ssh server") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
