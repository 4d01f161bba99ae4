package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/syncbuf"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// The end-to-end tests of swdt kubernetes: the whole CLI in-process
// against a simnode over SSH.

const (
	containerdExe = `C:\Program Files\containerd\containerd.exe`
	kubeletExe    = `C:\k\kubelet.exe`
	kubeProxyExe  = `C:\k\kube-proxy.exe`
)

// kubeFixture is a simnode plus a node file whose provisioners feed its
// three seeded services from local files.
type kubeFixture struct {
	t      *testing.T
	ts     *simnode.TestServer
	dir    string
	config string
	cache  string
	// sourceURL overrides a provisioner's source (name -> URL).
	sourceURL map[string]string
	sha       map[string]string
}

func newKubeFixture(t *testing.T, opts ...simnode.TestOption) *kubeFixture {
	t.Helper()
	fx := &kubeFixture{t: t, ts: simnode.StartTest(t, opts...), dir: t.TempDir(), sourceURL: map[string]string{}, sha: map[string]string{}}
	fx.cache = filepath.Join(fx.dir, "cache")
	for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
		fx.writeSource(name, "MZ "+name+" v2\n")
	}
	fx.writeConfig()
	return fx
}

func (fx *kubeFixture) sourcePath(name string) string { return filepath.Join(fx.dir, name+".exe") }

func (fx *kubeFixture) writeSource(name, content string) {
	fx.t.Helper()
	if err := os.WriteFile(fx.sourcePath(name), []byte(content), 0o644); err != nil {
		fx.t.Fatal(err)
	}
}

func (fx *kubeFixture) writeConfig() {
	fx.t.Helper()
	c := fx.ts.Credentials()
	src := func(name string) string {
		if u := fx.sourceURL[name]; u != "" {
			return u
		}
		return "./" + name + ".exe"
	}
	sha := func(name string) string {
		if s := fx.sha[name]; s != "" {
			return "\n      sha256: " + s
		}
		return ""
	}
	yaml := nodeHeader("sim", c) + fmt.Sprintf(`  kubernetes:
    provisioners:
    - name: containerd
      sourceURL: %s
      destination: '%s'%s
      healthCheck:
      - namedPipe: containerd-containerd
    - name: kubelet
      sourceURL: %s
      destination: '%s'%s
    - name: kube-proxy
      sourceURL: %s
      destination: '%s'%s
      healthCheck:
      - tcpPort: 10256
`, src("containerd"), containerdExe, sha("containerd"),
		src("kubelet"), kubeletExe, sha("kubelet"),
		src("kube-proxy"), kubeProxyExe, sha("kube-proxy"))
	fx.config = filepath.Join(fx.dir, "node.yaml")
	if err := os.WriteFile(fx.config, []byte(yaml), 0o600); err != nil {
		fx.t.Fatal(err)
	}
}

// run runs swdt kubernetes with short timeouts and the fixture's cache.
func (fx *kubeFixture) run(ctx context.Context, args ...string) (int, string, string) {
	fx.t.Helper()
	var out, errb bytes.Buffer
	code := fx.runWith(ctx, &out, &errb, args...)
	return code, out.String(), errb.String()
}

func (fx *kubeFixture) runWith(ctx context.Context, out, errOut io.Writer, args ...string) int {
	base := []string{"kubernetes", "-c", fx.config, "--cache-dir", fx.cache, "--no-color",
		"--stop-timeout", "300ms", "--start-timeout", "3s", "--settle", "200ms", "--health-timeout", "500ms"}
	return Run(ctx, Streams{In: strings.NewReader(""), Out: out, ErrOut: errOut}, append(base, args...))
}

func (fx *kubeFixture) runJSON(args ...string) (int, report.Kubernetes, string) {
	fx.t.Helper()
	code, out, errOut := fx.run(context.Background(), append(args, "-o", "json")...)
	var doc report.Kubernetes
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		fx.t.Fatalf("stdout is not JSON: %v\n%s\nstderr:\n%s", err, out, errOut)
	}
	return code, doc, errOut
}

func (fx *kubeFixture) content(p string) string {
	fx.t.Helper()
	b, err := fx.ts.Node().ReadFile(p)
	if err != nil {
		fx.t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

// tryContent is content for polling: "" while the file is missing (as it
// is for a moment during a swap).
func (fx *kubeFixture) tryContent(p string) string {
	b, _ := fx.ts.Node().ReadFile(p)
	return string(b)
}

// assertHealthy checks that every service runs its destination and that no
// staged or partial upload is left.
func (fx *kubeFixture) assertHealthy() {
	fx.t.Helper()
	n := fx.ts.Node()
	for _, c := range []struct{ svc, dest string }{{"containerd", containerdExe}, {"kubelet", kubeletExe}, {"kube-proxy", kubeProxyExe}} {
		svc, err := n.WaitService(context.Background(), c.svc, simnode.StatusRunning, 2*time.Second)
		if err != nil {
			fx.t.Errorf("%s: %v", c.svc, err)
			continue
		}
		if p, ok := n.LockedBy(c.dest); !ok || !inServiceTree(n, p, svc.PID) {
			fx.t.Errorf("%s does not run %s", c.svc, c.dest)
		}
		fx.assertNoStaged(c.dest)
	}
}

// assertNoStaged checks that no staged or partial upload of dest (of any
// run) is left in its directory.
func (fx *kubeFixture) assertNoStaged(dest string) {
	fx.t.Helper()
	dir, base := dest[:strings.LastIndex(dest, `\`)], dest[strings.LastIndex(dest, `\`)+1:]
	files, err := fx.ts.Node().List(dir)
	if err != nil {
		fx.t.Fatalf("list %s: %v", dir, err)
	}
	for _, f := range files {
		if strings.HasPrefix(strings.ToLower(f.Name), strings.ToLower(base)+".swdt-new") {
			fx.t.Errorf("%s left behind", f.Path)
		}
	}
}

func actions(doc report.Kubernetes) map[string]report.KubernetesProvisioner {
	out := map[string]report.KubernetesProvisioner{}
	for _, n := range doc.Nodes {
		for _, p := range n.Provisioners {
			out[p.Name] = p
		}
	}
	return out
}

func TestKubernetesUpdatesAllThenNothing(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	code, out, errOut := fx.run(context.Background())
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	fx.assertHealthy()
	for name, dest := range map[string]string{"containerd": containerdExe, "kubelet": kubeletExe, "kube-proxy": kubeProxyExe} {
		if got := fx.content(dest); got != "MZ "+name+" v2\n" {
			t.Errorf("%s holds %q", dest, got)
		}
	}
	// Stops run dependents first (simnode refuses otherwise, error 1051);
	// starts run dependencies first: PIDs are handed out in start order.
	st := fx.ts.State()
	if c, k, p := st.Services["containerd"].PID, st.Services["kubelet"].PID, st.Services["kube-proxy"].PID; !(c < k && k < p) {
		t.Errorf("start order by PID: containerd %d, kubelet %d, kube-proxy %d", c, k, p)
	}
	if !strings.Contains(errOut, "stop kube-proxy, kubelet, containerd; start containerd, kubelet, kube-proxy") {
		t.Errorf("plan lacks the order:\n%s", errOut)
	}
	for _, want := range []string{"PROVISIONER", "containerd", "updated", "DOWNTIME"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}

	code, doc, errOut := fx.runJSON()
	if code != exitcode.OK {
		t.Fatalf("second run: exit %d\n%s", code, errOut)
	}
	for name, p := range actions(doc) {
		if p.Action != "unchanged" || p.BytesSent != 0 || p.DowntimeMs != 0 {
			t.Errorf("second run %s = %+v, want unchanged with nothing sent", name, p)
		}
	}
	if s := doc.Nodes[0].Services; s == nil || len(s) != 0 {
		t.Errorf("second run: services = %v, want none stopped", s)
	}
	if starts := fx.ts.State().Services["kubelet"].StartCount; starts != st.Services["kubelet"].StartCount {
		t.Errorf("the second run restarted kubelet")
	}
}

func TestKubernetesJSONShape(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	code, out, _ := fx.run(context.Background(), "-o", "json", "--only", "kubelet")
	if code != exitcode.OK {
		t.Fatalf("exit %d", code)
	}
	var raw struct {
		APIVersion string           `json:"apiVersion"`
		Kind       string           `json:"kind"`
		Nodes      []map[string]any `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	if raw.APIVersion != "windows.k8s.io/v1alpha1" || raw.Kind != "KubernetesReport" {
		t.Errorf("apiVersion/kind = %q/%q", raw.APIVersion, raw.Kind)
	}
	nodes := raw.Nodes
	if len(nodes) != 1 || nodes[0]["name"] != "sim" {
		t.Fatalf("nodes = %v", nodes)
	}
	provs, _ := nodes[0]["provisioners"].([]any)
	if len(provs) != 1 {
		t.Fatalf("provisioners = %v", provs)
	}
	p := provs[0].(map[string]any)
	for _, key := range []string{"name", "action", "bytesSent", "fileSize", "transfer", "durationMs", "downtimeMs", "error"} {
		if _, ok := p[key]; !ok {
			t.Errorf("provisioner lacks %q: %v", key, p)
		}
	}
	if p["result"] != "changed" {
		t.Errorf("result = %v, want changed", p["result"])
	}
	if p["action"] != "updated" || p["fileSize"].(float64) != float64(len("MZ kubelet v2\n")) || p["bytesSent"].(float64) <= 0 || p["downtimeMs"].(float64) <= 0 {
		t.Errorf("provisioner = %v", p)
	}
	// Swapping kubelet stops kube-proxy (its dependent) too: the node
	// lists every stopped service's downtime, in stop order.
	services, _ := nodes[0]["services"].([]any)
	var names []string
	for _, s := range services {
		s := s.(map[string]any)
		names = append(names, fmt.Sprint(s["name"]))
		if d, _ := s["downtimeMs"].(float64); d <= 0 || s["running"] != true {
			t.Errorf("service %v", s)
		}
		if s["name"] == "kubelet" && s["downtimeMs"] != p["downtimeMs"] {
			t.Errorf("kubelet down %v ms, its provisioner %v ms", s["downtimeMs"], p["downtimeMs"])
		}
	}
	if strings.Join(names, ",") != "kube-proxy,kubelet" {
		t.Errorf("services = %v, want kube-proxy and kubelet", services)
	}
}

// The table lists every service the swap stopped: kube-proxy, stopped as
// kubelet's dependent, is "restarted" with its downtime, not hidden or
// "unchanged".
func TestKubernetesTableShowsRestartedServices(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	code, out, errOut := fx.run(context.Background(), "--only", "kubelet")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	row := regexp.MustCompile(`(?m)^kube-proxy +restarted +- +- +- +[0-9.]+m?s$`)
	if !row.MatchString(out) {
		t.Errorf("no kube-proxy restarted row with its downtime:\n%s", out)
	}
	// A provisioner of the run whose binary was unchanged but whose
	// service was stopped: restarted too.
	if code, _, errOut = fx.run(context.Background()); code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	fx.writeSource("kubelet", "MZ kubelet v3\n")
	code, out, errOut = fx.run(context.Background())
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if !regexp.MustCompile(`(?m)^kube-proxy +restarted .*[0-9.]+m?s$`).MatchString(out) || !regexp.MustCompile(`(?m)^containerd +unchanged `).MatchString(out) {
		t.Errorf("want kube-proxy (unchanged but stopped) restarted and containerd unchanged:\n%s", out)
	}
}

func TestKubernetesDryRunAndOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		code    int
		changed []string
		stdout  []string
		stderr  []string
	}{
		{name: "dry run changes nothing", args: []string{"--dry-run"}, code: exitcode.OK,
			stdout: []string{"REASON", "would-change", "content differs"}},
		{name: "only filters", args: []string{"--only", "kubelet,kube-proxy"}, code: exitcode.OK, changed: []string{kubeletExe, kubeProxyExe},
			stderr: []string{"stop kube-proxy, kubelet; start kubelet, kube-proxy"}},
		{name: "only with an unknown name", args: []string{"--only", "kubelet,flannel"}, code: exitcode.Usage,
			stderr: []string{"--only names no provisioner of the node file: flannel"}},
		{name: "dry run and watch", args: []string{"--dry-run", "--watch"}, code: exitcode.Usage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newKubeFixture(t)
			before := map[string]string{}
			for _, d := range []string{containerdExe, kubeletExe, kubeProxyExe} {
				before[d] = fx.content(d)
			}
			code, out, errOut := fx.run(context.Background(), tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tt.code, out, errOut)
			}
			for d, old := range before {
				changed := fx.content(d) != old
				if want := strings.Contains(strings.Join(tt.changed, "|"), d); changed != want {
					t.Errorf("%s changed = %v, want %v", d, changed, want)
				}
			}
			for _, w := range tt.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			fx.assertHealthy()
		})
	}
}

func TestKubernetesCrashOnStartRollsBack(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	old := fx.content(kubeletExe)
	fx.writeSource("kubelet", "MZ kubelet v2 SIMNODE-CRASH-ON-START\n")
	code, doc, errOut := fx.runJSON()
	if code != exitcode.Partial {
		t.Fatalf("exit %d, want %d\n%s", code, exitcode.Partial, errOut)
	}
	got := actions(doc)
	if k := got["kubelet"]; k.Action != "rolled-back" || !strings.Contains(k.Error, "stopped again") || !strings.Contains(k.Detail, "exit code 1") {
		t.Errorf("kubelet = %+v", k)
	}
	if got["containerd"].Action != "updated" || got["kube-proxy"].Action != "updated" {
		t.Errorf("others = %+v", got)
	}
	if fx.content(kubeletExe) != old {
		t.Error("the old kubelet is not back in place")
	}
	if !strings.Contains(errOut, "provisioner kubelet rolled-back") {
		t.Errorf("stderr does not report the rollback:\n%s", errOut)
	}
	fx.assertHealthy()
}

func TestKubernetesHangOnStopIsKilled(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	fx.writeSource("kubelet", "MZ kubelet v2 SIMNODE-HANG-ON-STOP\n")
	if code, _, errOut := fx.run(context.Background(), "--only", "kubelet"); code != exitcode.OK {
		t.Fatalf("install the hanging kubelet: exit %d\n%s", code, errOut)
	}
	fx.writeSource("kubelet", "MZ kubelet v3\n")
	code, doc, errOut := fx.runJSON("--only", "kubelet")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if k := actions(doc)["kubelet"]; k.Action != "updated" || !strings.Contains(k.Detail, "killed") {
		t.Errorf("kubelet = %+v", k)
	}
	if got := fx.content(kubeletExe); got != "MZ kubelet v3\n" {
		t.Errorf("kubelet holds %q", got)
	}
	fx.assertHealthy()
}

func TestKubernetesConnectionCutWhileStaging(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t, simnode.WithFaults(simnode.Faults{CutAfterBytes: 256 << 10}))
	big := strings.Repeat("kubelet v2 ", 100<<10) // about 1.1 MB
	fx.writeSource("kubelet", "MZ "+big)
	old := fx.content(kubeletExe)
	code, doc, errOut := fx.runJSON()
	k := actions(doc)["kubelet"]
	t.Logf("exit %d, kubelet %+v", code, k)
	switch code {
	case exitcode.OK:
		if k.Action != "updated" || fx.content(kubeletExe) != "MZ "+big {
			t.Errorf("retried run: kubelet = %+v", k)
		}
	case exitcode.Partial:
		if k.Action != "failed" || k.Error == "" || fx.content(kubeletExe) != old {
			t.Errorf("failed run: kubelet = %+v", k)
		}
	default:
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	fx.assertHealthy()
}

func TestKubernetesHTTPSource(t *testing.T) {
	t.Parallel()
	body := []byte("MZ kubelet from a release v2\n")
	sum := sha256.Sum256(body)
	var full atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v2"`)
		if r.Header.Get("If-None-Match") == `"v2"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		full.Add(1)
		_, _ = w.Write(body)
	}))
	defer srv.Close()

	fx := newKubeFixture(t)
	fx.sourceURL["kubelet"] = srv.URL + "/kubelet.exe"
	fx.sha["kubelet"] = hex.EncodeToString(sum[:])
	fx.writeConfig()
	if code, _, errOut := fx.run(context.Background(), "--only", "kubelet"); code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if fx.content(kubeletExe) != string(body) {
		t.Error("the downloaded kubelet is not in place")
	}
	if code, _, errOut := fx.run(context.Background(), "--only", "kubelet", "--force"); code != exitcode.OK {
		t.Fatalf("second run: exit %d\n%s", code, errOut)
	}
	if n := full.Load(); n != 1 {
		t.Errorf("downloaded %d times, want once (then cached)", n)
	}

	// A wrong digest stops the run before the node is touched.
	fx.sha["kubelet"] = strings.Repeat("ab", 32)
	fx.writeSource("containerd", "MZ containerd v3\n")
	fx.writeConfig()
	before := fx.ts.State()
	code, out, errOut := fx.run(context.Background())
	if code != exitcode.Failure || out != "" || !strings.Contains(errOut, "sha256 mismatch") || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
	}
	after := fx.ts.State()
	for name, svc := range before.Services {
		if a := after.Services[name]; a.PID != svc.PID || a.StartCount != svc.StartCount {
			t.Errorf("%s was touched: %+v -> %+v", name, svc, a)
		}
	}
	fx.assertNoStaged(containerdExe)
	if fx.content(containerdExe) == "MZ containerd v3\n" {
		t.Error("containerd was staged or swapped despite the failed source")
	}
}

func TestKubernetesMissingSource(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	if err := os.Remove(fx.sourcePath("kube-proxy")); err != nil {
		t.Fatal(err)
	}
	before := fx.content(kubeletExe)
	code, _, errOut := fx.run(context.Background())
	if code != exitcode.Usage || !strings.Contains(errOut, "does not exist") || !strings.Contains(errOut, "leave it out: --only containerd,kubelet") {
		t.Fatalf("exit %d, want 2 and a hint to use --only\n%s", code, errOut)
	}
	if fx.content(kubeletExe) != before {
		t.Error("kubelet changed although a source was missing")
	}
}

func TestKubernetesWatch(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- fx.runWith(ctx, &out, &errOut, "--watch", "--debounce", "100ms", "--only", "kubelet")
	}()
	if !waitFor(t, func() bool { return strings.Contains(errOut.String(), "watching 1 source") }) {
		t.Fatalf("the watch did not start:\n%s", errOut.String())
	}
	if got := fx.content(kubeletExe); got != "MZ kubelet v2\n" {
		t.Fatalf("the first run left %q", got)
	}
	fx.writeSource("kubelet", "MZ kubelet v3\n")
	swapped := waitFor(t, func() bool { return strings.Count(out.String(), "updated") == 2 })
	cancel()
	select {
	case code := <-done:
		if code != exitcode.OK {
			t.Errorf("exit %d\n%s", code, errOut.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("swdt kubernetes --watch did not stop after cancel")
	}
	if !swapped || fx.content(kubeletExe) != "MZ kubelet v3\n" {
		t.Fatalf("the rewritten source was not swapped:\n%s\n%s", out.String(), errOut.String())
	}
	if !regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d ▶ changed: sim/kubelet$`).MatchString(errOut.String()) {
		t.Errorf("stderr lacks the change:\n%s", errOut.String())
	}
	fx.assertHealthy()
}

type lockedBuffer = syncbuf.Buffer

// waitFor polls ok for up to 15 seconds.
func waitFor(t *testing.T, ok func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// --force reads every local source again: a hash record that no stat can
// tell is stale must not make every forced run fail its upload check.
func TestKubernetesForceRehashesSources(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	if code, _, errOut := fx.run(context.Background(), "--only", "kubelet"); code != exitcode.OK {
		t.Fatalf("first run: exit %d\n%s", code, errOut)
	}
	old := sha256.Sum256([]byte("MZ kubelet v2\n"))
	records, _ := filepath.Glob(filepath.Join(fx.cache, "hashes", "*.json"))
	if len(records) == 0 {
		t.Fatal("no hash records under the cache")
	}
	// Every record now names a digest the source does not have.
	for _, r := range records {
		raw, err := os.ReadFile(r)
		if err != nil {
			t.Fatal(err)
		}
		stale := strings.Replace(string(raw), hex.EncodeToString(old[:]), strings.Repeat("0", 64), 1)
		if err := os.WriteFile(r, []byte(stale), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, doc, errOut := fx.runJSON("--only", "kubelet", "--force")
	if code != exitcode.OK || len(doc.Nodes) != 1 || len(doc.Nodes[0].Provisioners) != 1 || doc.Nodes[0].Provisioners[0].Action != "updated" {
		t.Fatalf("forced run: exit %d, %+v\n%s", code, doc, errOut)
	}
}

// --max-download-size and --download-stall-timeout bound the downloads of
// http(s) sources; a download past them stops the run before any node is
// touched.
func TestKubernetesDownloadLimits(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4096")
		_, _ = w.Write(make([]byte, 1024))
		w.(http.Flusher).Flush()
		if r.URL.Path == "/stalls.exe" {
			<-r.Context().Done()
			return
		}
		_, _ = w.Write(make([]byte, 3072))
	}))
	defer srv.Close()
	fx := newKubeFixture(t)
	tests := []struct {
		name, path string
		args       []string
		code       int
		want       string
	}{
		{"over the cap", "/kubelet.exe", []string{"--max-download-size", "2Ki"}, exitcode.Failure, "the server announces 4.0 KiB, more than the 2.0 KiB cap"},
		{"within the cap", "/kubelet.exe", []string{"--max-download-size", "4Ki", "--dry-run"}, exitcode.OK, ""},
		{"stalls", "/stalls.exe", []string{"--download-stall-timeout", "300ms"}, exitcode.Failure, "nothing received for 300ms"},
		{"not a size", "/kubelet.exe", []string{"--max-download-size", "lots"}, exitcode.Usage, `"lots" is not a size`},
		{"not positive", "/kubelet.exe", []string{"--max-download-size", "0"}, exitcode.Usage, "must be more than 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx.sourceURL["kubelet"] = srv.URL + tt.path
			fx.writeConfig()
			before := fx.ts.State()
			code, _, errOut := fx.run(context.Background(), append([]string{"--only", "kubelet"}, tt.args...)...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, want %d and stderr containing %q:\n%s", code, tt.code, tt.want, errOut)
			}
			if code == exitcode.Failure && !strings.Contains(errOut, "nothing was changed") {
				t.Errorf("stderr does not say that nothing was changed:\n%s", errOut)
			}
			if svc := fx.ts.State().Services["kubelet"]; svc.StartCount != before.Services["kubelet"].StartCount {
				t.Error("kubelet was restarted")
			}
		})
	}
}

// The agent's upload on first contact shows like any other upload; a
// later run, which finds the agent in place, uploads nothing.
func TestFirstContactShowsTheAgentUpload(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	const upload = "node sim: upload swdt-agent (first contact)"
	for i, want := range []bool{true, false} {
		code, _, errOut := fx.run(context.Background())
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s", i+1, code, errOut)
		}
		if got := strings.Contains(errOut, "▶ "+upload) && strings.Contains(errOut, "✔ "+upload); got != want {
			t.Errorf("run %d shows the agent's upload start and end: %v, want %v\n%s", i+1, got, want, errOut)
		}
	}
}
