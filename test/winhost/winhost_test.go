// Package winhost runs the laptop side as a Windows (Hyper-V host) user
// runs it: the cross-built swdt.exe under Wine, with Windows paths,
// %USERPROFILE% and OpenSSH for Windows' conventions, against simnodes on
// loopback; and the tests of swdt's Windows-only laptop code, built for
// Windows and run under Wine. It skips when Wine or mingw-w64 is missing
// (make test-deps installs them) and fails then under CI=true.
package winhost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/echotest"
	"sigs.k8s.io/swdt/internal/syncbuf"
	"sigs.k8s.io/swdt/internal/winetest"
	"sigs.k8s.io/swdt/pkg/simnode"
)

func TestMain(m *testing.M) {
	code := m.Run()
	winetest.Cleanup()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// built are the Windows programs of the tier, cross-built once.
var built struct {
	once sync.Once
	err  error
	dir  string
	// swdt is swdt.exe (with its agents embedded, as make cross builds
	// it); wnc a ProxyCommand (testdata/wnc); tests are the Windows test
	// binaries of packages with Windows-only laptop code, by package.
	swdt  string
	wnc   string
	tests map[string]string
}

// windowsTests are the packages whose _windows_test.go files test the
// laptop's Windows-only code, with the tests to run.
var windowsTests = map[string]string{
	"../../pkg/remote": "TestDialAgentPipe",
	"../../pkg/winos":  "TestWindows",
}

func build(t *testing.T) {
	t.Helper()
	winetest.Require(t)
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "swdt-winhost-"); built.err != nil {
			return
		}
		built.swdt = filepath.Join(built.dir, "swdt.exe")
		if built.err = winetest.BuildWindows(built.swdt, "../../cmd/swdt", false); built.err != nil {
			return
		}
		built.wnc = filepath.Join(built.dir, "wnc.exe")
		if built.err = winetest.BuildWindows(built.wnc, "./testdata/wnc", false); built.err != nil {
			return
		}
		built.tests = map[string]string{}
		for pkg := range windowsTests {
			out := filepath.Join(built.dir, filepath.Base(pkg)+".test.exe")
			if built.err = winetest.BuildWindows(out, pkg, true); built.err != nil {
				return
			}
			built.tests[pkg] = out
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
}

// host is a Windows machine (a Wine prefix) with swdt.exe at C:\swdt.
type host struct {
	t *testing.T
	p *winetest.Prefix
}

func newHost(t *testing.T) *host {
	t.Helper()
	build(t)
	h := &host{t: t, p: winetest.NewPrefix(t)}
	raw, err := os.ReadFile(built.swdt)
	if err != nil {
		t.Fatal(err)
	}
	h.p.WriteFile(`C:\swdt\swdt.exe`, raw)
	return h
}

// command is swdt.exe with args in the prefix, its working folder
// C:\work, colour off and env added to its environment.
func (h *host) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	h.t.Helper()
	if err := os.MkdirAll(h.p.Path(`C:\work`), 0o755); err != nil {
		h.t.Fatal(err)
	}
	cmd := h.p.Command(ctx, "wine", append([]string{`C:\swdt\swdt.exe`}, args...)...)
	cmd.Env = h.p.Env(append([]string{"NO_COLOR=1"}, env...)...)
	cmd.Dir = h.p.Path(`C:\work`)
	return cmd
}

// swdt runs swdt.exe and returns its exit code, stdout and stderr.
func (h *host) swdt(ctx context.Context, env []string, args ...string) (int, string, string) {
	h.t.Helper()
	cmd := h.command(ctx, env, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if code < 0 {
		h.t.Fatalf("swdt.exe %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return code, strings.ReplaceAll(out.String(), "\r\n", "\n"), strings.ReplaceAll(errb.String(), "\r\n", "\n")
}

// node writes a node file for ts at C:\work\node.yaml, its key and
// known_hosts copied to C:\work\keys: only Windows paths, as a Windows
// user's node file has them. spec is added under spec:.
func (h *host) node(ts *simnode.TestServer, spec string) string {
	h.t.Helper()
	c := ts.Credentials()
	for win, host := range map[string]string{`C:\work\keys\id_ed25519`: c.PrivateKey, `C:\work\keys\known_hosts`: c.KnownHostsFile} {
		raw, err := os.ReadFile(host)
		if err != nil {
			h.t.Fatal(err)
		}
		h.p.WriteFile(win, raw)
	}
	doc := fmt.Sprintf(`apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: node1
spec:
  credentials:
    hostname: %q
    username: %s
    privateKey: 'C:\work\keys\id_ed25519'
    knownHostsFile: 'C:\work\keys\known_hosts'
    hostKeyPolicy: strict
`, c.Hostname, c.Username) + spec
	h.p.WriteFile(`C:\work\node.yaml`, []byte(doc))
	return `C:\work\node.yaml`
}

// kubeletSpec is a node file's kubelet provisioner, its build in a
// folder whose name holds a space.
const kubeletSpec = `  kubernetes:
    provisioners:
    - name: kubelet
      sourceURL: 'C:\work\build dir\kubelet.exe'
      destination: 'C:\k\kubelet.exe'
`

// kubeletNode writes a kubelet build and a node file for ts with
// kubeletSpec, and returns the node file's path.
func (h *host) kubeletNode(ts *simnode.TestServer) string {
	h.t.Helper()
	h.p.WriteFile(`C:\work\build dir\kubelet.exe`, []byte("MZ kubelet v2\n"))
	return h.node(ts, kubeletSpec)
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// The tests of swdt's Windows-only laptop code pass on Windows (Wine).
func TestWindowsOnlyCode(t *testing.T) {
	build(t)
	p := winetest.NewPrefix(t)
	for pkg, run := range windowsTests {
		raw, err := os.ReadFile(built.tests[pkg])
		if err != nil {
			t.Fatal(err)
		}
		exe := `C:\tests\` + filepath.Base(built.tests[pkg])
		p.WriteFile(exe, raw)
		out, err := p.Command(ctxFor(t), "wine", exe, "-test.run", run, "-test.v").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS") {
			t.Errorf("%s %s under Wine: %v\n%s", pkg, run, err, out)
		}
	}
}

// config init writes its defaults from %USERPROFILE%, and config validate
// reads Windows paths: drive letters, backslashes, a folder with a space.
func TestConfigOnWindows(t *testing.T) {
	h := newHost(t)
	ctx := ctxFor(t)
	profile := h.p.UserProfile()
	h.p.WriteFile(profile+`\.ssh\id_rsa`, []byte("key"))
	h.p.WriteFile(profile+`\.ssh\id_rsa.pub`, []byte("ssh-rsa AAAA key"))
	code, _, errOut := h.swdt(ctx, nil, "config", "init", "--output-file", `C:\work\init.yaml`, "--hostname", "192.0.2.10", "--username", "Administrator", "--only", "kubelet")
	if code != 0 {
		t.Fatalf("config init: exit %d\n%s", code, errOut)
	}
	raw, err := h.p.ReadFile(`C:\work\init.yaml`)
	if err != nil || !strings.Contains(string(raw), "privateKey: ~/.ssh/id_rsa") {
		t.Errorf("config init wrote %v:\n%s", err, raw)
	}
	ts := simnode.StartTest(t)
	cfg := h.kubeletNode(ts)
	code, out, errOut := h.swdt(ctx, nil, "config", "validate", "-c", cfg, "-o", "json")
	if code != 0 || !strings.Contains(out, `"node1"`) {
		t.Errorf("config validate: exit %d\n%s\n%s", code, out, errOut)
	}
	raw, err = h.p.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.p.WriteFile(`C:\work\missing.yaml`, bytes.Replace(raw, []byte(`build dir\kubelet.exe`), []byte(`no dir\kubelet.exe`), 1))
	code, _, errOut = h.swdt(ctx, nil, "config", "validate", "-c", `C:\work\missing.yaml`)
	if code != 2 || !strings.Contains(errOut, `C:\work\no dir\kubelet.exe does not exist`) {
		t.Errorf("a missing source: exit %d\n%s", code, errOut)
	}
}

// The daily loop from a Windows host: a swap and a rollback, status and
// -o json, exec, ssh -- CMD and cp both ways with Windows paths.
func TestDailyLoopOnWindows(t *testing.T) {
	h := newHost(t)
	ctx := ctxFor(t)
	ts := simnode.StartTest(t)
	cfg := h.kubeletNode(ts)
	env := []string{"SWDT_CONFIG=" + cfg}

	code, _, errOut := h.swdt(ctx, env, "kubernetes", "--settle", "100ms")
	if code != 0 || !strings.Contains(errOut, "kubelet") {
		t.Fatalf("kubernetes: exit %d\n%s", code, errOut)
	}
	if b, err := ts.Node().ReadFile(`C:\k\kubelet.exe`); err != nil || string(b) != "MZ kubelet v2\n" {
		t.Errorf("kubelet on the node after the swap: %q, %v", b, err)
	}

	// A build that does not stay up is rolled back.
	h.p.WriteFile(`C:\work\build dir\kubelet.exe`, []byte("MZ kubelet v3 "+simnode.MarkerCrashOnStart+"\n"))
	code, _, errOut = h.swdt(ctx, env, "kubernetes", "--settle", "100ms")
	if code == 0 || !strings.Contains(errOut, "kubelet rolled-back") {
		t.Errorf("a crashing build: exit %d\n%s", code, errOut)
	}
	if b, _ := ts.Node().ReadFile(`C:\k\kubelet.exe`); string(b) != "MZ kubelet v2\n" {
		t.Errorf("kubelet after the rollback: %q", b)
	}

	code, out, errOut := h.swdt(ctx, env, "status", "-o", "json")
	var doc struct {
		Nodes []struct {
			Name string `json:"name"`
		} `json:"nodes"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || len(doc.Nodes) != 1 || doc.Nodes[0].Name != "node1" {
		t.Errorf("status -o json: exit %d\n%s\n%s", code, out, errOut)
	}

	code, out, errOut = h.swdt(ctx, env, "exec", "--", "hostname")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Errorf("exec hostname: exit %d, stdout %q\n%s", code, out, errOut)
	}
	code, out, errOut = h.swdt(ctx, env, "ssh", "--", "hostname")
	if code != 0 || strings.TrimSpace(out) == "" {
		t.Errorf("ssh -- hostname: exit %d, stdout %q\n%s", code, out, errOut)
	}

	h.p.WriteFile(`C:\work\to node\notes.txt`, []byte("line one\r\n"))
	code, _, errOut = h.swdt(ctx, env, "cp", `C:\work\to node`, `:C:\k`)
	if b, err := ts.Node().ReadFile(`C:\k\to node\notes.txt`); code != 0 || err != nil || string(b) != "line one\r\n" {
		t.Errorf("cp to the node: exit %d, %q, %v\n%s", code, b, err, errOut)
	}
	code, _, errOut = h.swdt(ctx, env, "cp", `:C:\k\to node`, `C:\work\back`)
	if b, err := h.p.ReadFile(`C:\work\back\notes.txt`); code != 0 || err != nil || string(b) != "line one\r\n" {
		t.Errorf("cp from the node: exit %d, %q, %v\n%s", code, b, err, errOut)
	}

	code, _, errOut = h.swdt(ctx, env, "logs", "node1", "kubelet")
	if code != 0 {
		t.Errorf("logs: exit %d\n%s", code, errOut)
	}
}

// setup and wins --deep from a Windows host, with a public key and a
// wins.exe named by Windows paths.
func TestSetupAndWinsOnWindows(t *testing.T) {
	h := newHost(t)
	ctx := ctxFor(t)
	ts := simnode.StartTest(t)
	pub, err := os.ReadFile(ts.PublicKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	h.p.WriteFile(`C:\work\keys\id_ed25519.pub`, pub)
	h.p.WriteFile(`C:\work\build dir\wins.exe`, []byte("MZ rancher/wins v0.15.1\n"))
	cfg := h.node(ts, `  setup:
    chocoPackages: [vim]
    authorizedKeys: ['C:\work\keys\id_ed25519.pub']
  wins:
    sourceURL: 'C:\work\build dir\wins.exe'
    whiteList:
      processPaths: ['C:\etc\rancher\wins\agent.exe']
`)
	if code, _, errOut := h.swdt(ctx, nil, "setup", "-c", cfg); code != 0 {
		t.Errorf("setup: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := h.swdt(ctx, nil, "wins", "-c", cfg, "--deep", "--settle", "100ms"); code != 0 {
		t.Errorf("wins --deep: exit %d\n%s", code, errOut)
	}
}

// running is swdt.exe started in the background.
type running struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *syncbuf.Buffer
	errb *syncbuf.Buffer
	done chan struct{}
}

func (h *host) start(ctx context.Context, env []string, args ...string) *running {
	h.t.Helper()
	cmd := h.command(ctx, env, args...)
	r := &running{t: h.t, cmd: cmd, out: &syncbuf.Buffer{}, errb: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.out, r.errb
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(r.done) }()
	h.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-r.done
	})
	return r
}

// await waits until cond holds on stdout and stderr, failing the test
// when swdt.exe ends first or after a minute.
func (r *running) await(what string, cond func(out, errOut string) bool) {
	r.t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	limit := time.After(time.Minute)
	for !cond(r.out.String(), r.errb.String()) {
		select {
		case <-r.done:
			r.t.Fatalf("swdt.exe ended before %s\n%s\n%s", what, r.out.String(), r.errb.String())
		case <-limit:
			r.t.Fatalf("no %s after a minute\n%s\n%s", what, r.out.String(), r.errb.String())
		case <-tick.C:
		}
	}
}

// interrupt sends Ctrl-C (Wine makes SIGINT a console control event)
// and returns the exit code.
func (r *running) interrupt() int {
	r.t.Helper()
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		r.t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		r.t.Fatalf("swdt.exe did not end a minute after Ctrl-C\n%s", r.errb.String())
	}
	return r.cmd.ProcessState.ExitCode()
}

// port-forward and kubernetes --watch run until Ctrl-C, as a console
// control event, which ends them cleanly.
func TestLongLivedVerbsOnWindows(t *testing.T) {
	h := newHost(t)
	ctx := ctxFor(t)
	ts := simnode.StartTest(t)
	cfg := h.kubeletNode(ts)
	env := []string{"SWDT_CONFIG=" + cfg}

	echo := echotest.Server(t, "")
	pf := h.start(ctx, env, "port-forward", "-o", "json", "node1", ":"+strconv.Itoa(echo))
	var doc struct {
		Forwards []struct {
			Local string `json:"local"`
		} `json:"forwards"`
	}
	pf.await("a forward", func(out, _ string) bool {
		return json.Unmarshal([]byte(strings.TrimSpace(out)), &doc) == nil && len(doc.Forwards) == 1
	})
	if got := echotest.Ask(t, doc.Forwards[0].Local, "hello"); got != "hello\n" {
		t.Errorf("through the forward: %q", got)
	}
	if code := pf.interrupt(); code != 0 {
		t.Errorf("Ctrl-C ended port-forward with exit %d\n%s", code, pf.errb.String())
	}

	w := h.start(ctx, env, "kubernetes", "--watch", "--settle", "100ms")
	w.await("the first swap and the watch", func(_, errOut string) bool { return strings.Contains(errOut, "watching 1 source") })
	h.p.WriteFile(`C:\work\build dir\kubelet.exe`, []byte("MZ kubelet v3\n"))
	// The rebuild is seen through the Windows file-change API and
	// swapped: its summary is the second one.
	w.await("the rebuild swapped", func(out, _ string) bool { return strings.Count(out, "updated") == 2 })
	if b, err := ts.Node().ReadFile(`C:\k\kubelet.exe`); err != nil || string(b) != "MZ kubelet v3\n" {
		t.Errorf("kubelet after the rebuild: %q, %v", b, err)
	}
	if code := w.interrupt(); code != 0 {
		t.Errorf("Ctrl-C while watching: exit %d\n%s", code, w.errb.String())
	}
}

// readmeBatLines are the command lines of the README's Windows section
// (its ```bat block).
func readmeBatLines(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## On a Windows host")
	_, block, ok2 := strings.Cut(section, "\n```bat\n")
	block, _, ok3 := strings.Cut(block, "\n```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no ```bat block in its section \"On a Windows host\"")
	}
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// The README's Windows lines run as written in cmd.exe, with swdt.exe on
// the PATH, the key in %USERPROFILE%\.ssh and VM_HOST set, against a
// simnode that has a kubelet service to swap into.
func TestREADMEWindowsLines(t *testing.T) {
	h := newHost(t)
	ctx := ctxFor(t)
	ts := simnode.StartTest(t)
	profile := h.p.UserProfile()
	key, err := os.ReadFile(ts.Credentials().PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(ts.PublicKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	h.p.WriteFile(profile+`\.ssh\id_ed25519`, key)
	h.p.WriteFile(profile+`\.ssh\id_ed25519.pub`, pub)
	// Where the sample node file expects the kubelet build.
	h.p.WriteFile(profile+`\go\src\k8s.io\kubernetes\_output\local\bin\windows\amd64\kubelet.exe`, []byte("MZ kubelet v2\n"))
	env := []string{"VM_HOST=" + ts.Credentials().Hostname, `WINEPATH=C:\swdt`}
	for _, line := range readmeBatLines(t) {
		cmd := h.p.Command(ctx, "wine", "cmd", "/c", line)
		cmd.Env = h.p.Env(append([]string{"NO_COLOR=1"}, env...)...)
		cmd.Dir = h.p.Path(`C:\work`)
		if err := os.MkdirAll(cmd.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
	}
	if b, err := ts.Node().ReadFile(`C:\k\kubelet.exe`); err != nil || string(b) != "MZ kubelet v2\n" {
		t.Errorf("the README's lines did not swap the kubelet: %q, %v", b, err)
	}
	// What swdt wrote for the Windows tools that read it after: UTF-8
	// without a byte order mark (OpenSSH for Windows refuses a BOM in
	// known_hosts), one entry a line, and a node file config validate
	// reads back.
	for _, f := range []string{profile + `\.ssh\known_hosts`, `C:\work\node.yaml`} {
		raw, err := h.p.ReadFile(f)
		if err != nil || len(raw) == 0 || bytes.HasPrefix(raw, []byte{0xEF, 0xBB, 0xBF}) || !bytes.HasSuffix(raw, []byte("\n")) || bytes.IndexByte(raw, 0) >= 0 {
			t.Errorf("%s as swdt wrote it: %q, %v", f, raw, err)
		}
	}
}

// Local Hyper-V mode (spec.vm.hyperv without a host: this machine) on a
// host without Windows PowerShell's Hyper-V module, as under Wine: swdt
// vm says what is missing and how to install it.
func TestHyperVLocalModeWithoutHyperV(t *testing.T) {
	h := newHost(t)
	h.p.WriteFile(`C:\work\vm.yaml`, []byte(`apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: hv
spec:
  credentials:
    username: Administrator
  vm:
    provider: hyperv
    name: Windows Server 2022
`))
	code, _, errOut := h.swdt(ctxFor(t), nil, "vm", "status", "-c", `C:\work\vm.yaml`)
	if code != 2 || !strings.Contains(errOut, "no-hyperv") || !strings.Contains(errOut, "Install-WindowsFeature Hyper-V -IncludeManagementTools") {
		t.Errorf("vm status without Hyper-V: exit %d\n%s", code, errOut)
	}
}

// OpenSSH for Windows' places: the key, known_hosts and config under
// %USERPROFILE%\.ssh, a ProxyCommand run through cmd.exe; caches under
// %LOCALAPPDATA%; no colour codes where the output is not a console.
func TestOpenSSHConventionsOnWindows(t *testing.T) {
	h := newHost(t)
	ctx := ctxFor(t)
	ts := simnode.StartTest(t)
	c := ts.Credentials()
	profile := h.p.UserProfile()
	for win, host := range map[string]string{profile + `\.ssh\id_ed25519`: c.PrivateKey, profile + `\.ssh\known_hosts`: c.KnownHostsFile, `C:\tools\wnc.exe`: built.wnc} {
		raw, err := os.ReadFile(host)
		if err != nil {
			t.Fatal(err)
		}
		h.p.WriteFile(win, raw)
	}
	host, port, err := net.SplitHostPort(c.Hostname)
	if err != nil {
		t.Fatal(err)
	}
	// Port 1 answers nothing: only the ProxyCommand, run by cmd.exe with
	// %h substituted, reaches the node.
	h.p.WriteFile(profile+`\.ssh\config`, []byte("Host winnode\n  HostName "+host+"\n  Port 1\n  User "+c.Username+
		"\n  ProxyCommand C:\\tools\\wnc.exe %h "+port+"\n"))
	h.p.WriteFile(`C:\work\build dir\kubelet.exe`, []byte("MZ kubelet v2\n"))
	// No key, known_hosts or user in the node file: all from ~/.ssh, and
	// the ssh config's alias reached through its ProxyCommand. The known
	// host is the node's key under the address ssh config names.
	raw, err := h.p.ReadFile(profile + `\.ssh\known_hosts`)
	if err != nil {
		t.Fatal(err)
	}
	h.p.WriteFile(profile+`\.ssh\known_hosts`, bytes.ReplaceAll(raw, []byte("["+host+"]:"+port), []byte("["+host+"]:1")))
	h.p.WriteFile(`C:\work\node.yaml`, []byte(`apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: node1
spec:
  credentials:
    hostname: winnode
    hostKeyPolicy: strict
  kubernetes:
    provisioners:
    - name: kubelet
      sourceURL: 'C:\work\build dir\kubelet.exe'
      destination: 'C:\k\kubelet.exe'
`))
	cmd := h.command(ctx, nil, "kubernetes", "-c", `C:\work\node.yaml`, "--settle", "100ms")
	cmd.Env = h.p.Env() // colour as swdt decides it, NO_COLOR unset
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubernetes through ~/.ssh/config and its ProxyCommand: %v\n%s", err, out)
	}
	if bytes.Contains(out, []byte("\x1b[")) {
		t.Errorf("colour codes where the output is a pipe:\n%q", out)
	}
	if b, err := ts.Node().ReadFile(`C:\k\kubelet.exe`); err != nil || string(b) != "MZ kubelet v2\n" {
		t.Errorf("kubelet on the node: %q, %v", b, err)
	}
	if entries, err := os.ReadDir(h.p.Path(profile + `\AppData\Local\swdt`)); err != nil || len(entries) == 0 {
		t.Errorf("no cache under %%LOCALAPPDATA%%\\swdt: %v", err)
	}
}

// Ctrl-C during a swap (a console control event): the swap finishes, so
// that the services run again, and swdt.exe exits 130.
func TestInterruptDuringASwapOnWindows(t *testing.T) {
	h := newHost(t)
	ctx := ctxFor(t)
	d := simnode.DefaultDelays()
	d.ServiceStop, d.ServiceStart = 2*time.Second, 2*time.Second
	ts := simnode.StartTest(t, simnode.WithDelays(d))
	cfg := h.kubeletNode(ts)
	r := h.start(ctx, nil, "kubernetes", "-c", cfg, "--settle", "100ms")
	r.await("the swap", func(_, errOut string) bool { return strings.Contains(errOut, "swapping:") })
	if code := r.interrupt(); code != 130 {
		t.Errorf("Ctrl-C during the swap: exit %d, want 130\n%s", code, r.errb.String())
	}
	if !strings.Contains(r.errb.String(), "a swap in progress finishes first") {
		t.Errorf("stderr does not say the swap finishes first:\n%s", r.errb.String())
	}
	st := ts.State()
	if b, _ := ts.Node().ReadFile(`C:\k\kubelet.exe`); string(b) != "MZ kubelet v2\n" || st.Services["kubelet"].Status != "Running" {
		t.Errorf("after the interrupted swap: kubelet %q, service %s", b, st.Services["kubelet"].Status)
	}
}
