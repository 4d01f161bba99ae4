package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

func TestExec(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := statusFile(t, ts, "", "MZ kubelet\n")
	if err := ts.Node().WriteFile(`C:\k\notes.txt`, []byte("line one\r\nline two\r\n")); err != nil {
		t.Fatal(err)
	}
	hostile := `a b; "quoted" & del C:\k\kubelet.exe | $(whoami) %PATH%`
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    string
		wantErrOut string
	}{
		{"output and exit 0", []string{"winworker", "--", "cmd.exe", "/c", "type", `C:\k\notes.txt`}, 0, "line one\r\nline two\r\n", ""},
		{"arguments are data", []string{"winworker", "cmd.exe", "/c", "echo", hostile}, 0, hostile + "\r\n", ""},
		{"flags after the node are the program's", []string{"winworker", "cmd.exe", "/c", "echo", "-o", "json", "--timeout"}, 0, "-o json --timeout\r\n", ""},
		{"stderr and exit status passed on", []string{"winworker", "--", "cmd.exe", "/c", "type", `C:\k\missing.txt`}, 1, "", "The system cannot find the file specified.\r\n"},
		{"any exit status", []string{"winworker", "--", "cmd.exe", "/c", "exit", "/b", "42"}, 42, "", ""},
		{"PATH lookup without .exe", []string{"winworker", "hostname"}, 0, "WIN-SIMNODE01\r\n", ""},
		{"a program that does not exist", []string{"winworker", "--", "crictl", "ps"}, exitcode.Failure, "", "crictl: no such program on the node"},
		{"too long", []string{"--timeout", "1s", "winworker", "--", "timeout.exe", "/t", "30"}, exitcode.Failure, "", "ran longer than --timeout 1s and was stopped"},
		{"unknown node", []string{"nosuch", "--", "hostname"}, exitcode.Usage, "", `has no node "nosuch"; its nodes: winworker`},
		{"no program", []string{"winworker", "--"}, exitcode.Usage, "", "no program after --"},
		{"nothing to run", []string{}, exitcode.Usage, "", "swdt exec needs a program"},
		{"the file's only node by default", []string{"--", "hostname"}, 0, "WIN-SIMNODE01\r\n", ""},
		{"the file's only node, no --", []string{"hostname"}, 0, "WIN-SIMNODE01\r\n", ""},
		{"--node", []string{"--node", "winworker", "hostname"}, 0, "WIN-SIMNODE01\r\n", ""},
		{"--node that is not in the file", []string{"--node", "nosuch", "hostname"}, exitcode.Usage, "", `has no node "nosuch"`},
		{"NODE and --node disagree", []string{"--node", "other", "winworker", "--", "hostname"}, exitcode.Usage, "", "swdt exec works on one node: it was named winworker and --node other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := ts.State()
			code, out, errOut := run(t, append([]string{"exec", "-c", file}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %q\nstderr: %s", code, tt.wantCode, out, errOut)
			}
			if out != tt.wantOut {
				t.Errorf("stdout = %q, want %q", out, tt.wantOut)
			}
			if tt.wantErrOut == "" && errOut != "" || !strings.Contains(errOut, tt.wantErrOut) {
				t.Errorf("stderr = %q, want %q", errOut, tt.wantErrOut)
			}
			if strings.Contains(errOut, "#swdt-result") {
				t.Errorf("the result line reached the user: %q", errOut)
			}
			if after := ts.State(); len(after.Services) != len(before.Services) {
				t.Errorf("exec changed the services: %d -> %d", len(before.Services), len(after.Services))
			}
		})
	}
}

func TestLogs(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := statusFile(t, ts, "", "MZ kubelet\n")
	n := ts.Node()
	if err := n.ConfigureService("kubelet", func(cfg *simnode.ServiceConfig) {
		cfg.Args = append(cfg.Args, "--v=2", `--log-file=C:\var\log\kubelet\kubelet.log`)
	}); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	for i := 1; i <= 80; i++ {
		log.WriteString("I1123 kubelet line " + strconv.Itoa(i) + "\r\n")
	}
	if err := n.MkdirAll(`C:\var\log\kubelet`); err != nil {
		t.Fatal(err)
	}
	if err := n.WriteFile(`C:\var\log\kubelet\kubelet.log`, []byte(log.String()+"I1123 half a li")); err != nil {
		t.Fatal(err)
	}
	proxy, err := n.Service("kube-proxy")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.KillProcess(proxy.PID); err != nil { // an unexpected exit: the SCM logs it
		t.Fatal(err)
	}

	t.Run("text", func(t *testing.T) {
		code, out, errOut := run(t, "logs", "-c", file, "winworker", "kubelet", "-n", "3")
		if code != exitcode.OK {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		want := "I1123 kubelet line 78\nI1123 kubelet line 79\nI1123 kubelet line 80\n"
		if out != want {
			t.Errorf("stdout = %q, want %q", out, want)
		}
		if !strings.Contains(errOut, `kubelet (Running): C:\var\log\kubelet\kubelet.log`) {
			t.Errorf("stderr lacks the log file: %s", errOut)
		}
		_, out, _ = run(t, "logs", "-c", file, "winworker", "kube-proxy")
		if !regexp.MustCompile(`^event \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ: .*terminated unexpectedly`).MatchString(out) {
			t.Errorf("kube-proxy's event lacks its time: %q", out)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, out, errOut := run(t, "logs", "-c", file, "-o", "json", "winworker", "kube-proxy", "kubelet", "-n", "1")
		if code != exitcode.OK {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		var doc report.Logs
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("bad JSON (%v): %s", err, out)
		}
		if doc.Kind != report.KindLogs || doc.APIVersion == "" || len(doc.Services) != 2 {
			t.Fatalf("document = %+v", doc)
		}
		proxy, kubelet := doc.Services[0], doc.Services[1]
		if proxy.Status != "Stopped" || proxy.LogFile != "" || len(proxy.Events) != 1 || !strings.Contains(proxy.Events[0].Message, "terminated unexpectedly") || proxy.Events[0].Time.IsZero() {
			t.Errorf("kube-proxy = %+v, want Stopped, no log file, its crash event", proxy)
		}
		if len(kubelet.Lines) != 1 || kubelet.Lines[0] != "I1123 kubelet line 80" || kubelet.Offset != int64(log.Len()) {
			t.Errorf("kubelet = lines %q offset %d, want line 80 and offset %d (before the half line)", kubelet.Lines, kubelet.Offset, log.Len())
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, args := range [][]string{{"--node", "nosuch"}, {"winworker", "kubelet", "--interval", "1ms"}} {
			if code, _, errOut := run(t, append([]string{"logs", "-c", file}, args...)...); code != exitcode.Usage {
				t.Errorf("%v: exit %d, want %d\n%s", args, code, exitcode.Usage, errOut)
			}
		}
		code, _, errOut := run(t, "logs", "-c", file, "winworker", "no-such-service")
		if code != exitcode.Failure || !strings.Contains(errOut, "no-such-service") {
			t.Errorf("exit %d, stderr %s", code, errOut)
		}
	})
}

// A service of the node file that is not on the node (wins named but not
// deployed) is a note; the others' logs still show, and the exit is 0.
func TestLogsAbsentService(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := statusFile(t, ts, "", "MZ kubelet\n")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append(raw, "  wins:\n    sourceURL: ./wins.exe\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "logs", "-c", file, "--no-color", "winworker")
	if code != exitcode.OK {
		t.Fatalf("exit %d, want 0\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "node winworker: rancher-wins: no such service on this node; skipped") || !strings.Contains(errOut, "kubelet (Running)") {
		t.Errorf("stderr lacks the note about wins or kubelet's header:\n%s", errOut)
	}
	// The file's only node without NODE, or named by --node.
	for _, args := range [][]string{{}, {"--node", "winworker"}} {
		code, _, errOut = run(t, append([]string{"logs", "-c", file, "--no-color"}, args...)...)
		if code != exitcode.OK || !strings.Contains(errOut, "node winworker: kubelet (Running)") {
			t.Errorf("logs %v: exit %d\n%s", args, code, errOut)
		}
	}
	// Completion offers the nodes, then the node's services.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{""}, "winworker\nkubelet\ncontainerd\nrancher-wins\n:4\n"},
		{[]string{"winworker", ""}, "kubelet\ncontainerd\nrancher-wins\n:4\n"},
		{[]string{"winworker", "kubelet", ""}, "containerd\nrancher-wins\n:4\n"},
	} {
		_, out, _ := run(t, append([]string{"__complete", "logs", "-c", file}, tt.args...)...)
		if !strings.HasPrefix(out, tt.want) {
			t.Errorf("completion of logs %q = %q, want %q", tt.args, out, tt.want)
		}
	}
	code, out, errOut = run(t, "logs", "-c", file, "-o", "json", "winworker")
	doc := decodeJSON[report.Logs](t, out)
	if code != exitcode.OK || len(doc.Absent) != 1 || doc.Absent[0] != "rancher-wins" || len(doc.Services) == 0 {
		t.Errorf("exit %d, document %+v\n%s", code, doc, errOut)
	}
}

// In a file of several nodes, logs and exec need the node: as their first
// argument (a typo gets a suggestion) or as the one --node names.
func TestDayTwoNodeSelection(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := statusFile(t, ts, "", "MZ kubelet\n")
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	gone := ts.Credentials()
	gone.Hostname = "127.0.0.1:1"
	if err := os.WriteFile(file, append(raw, "---\n"+nodeHeader("other", gone)...), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"logs"}, exitcode.Usage, "swdt logs needs a node: " + file + " has 2 (winworker, other); name one first, or use --node"},
		{[]string{"logs", "winworkr"}, exitcode.Usage, `did you mean "winworker"?`},
		{[]string{"logs", "--node", "winworker"}, exitcode.OK, "node winworker: kubelet (Running)"},
		{[]string{"exec", "--node", "winworker,other", "hostname"}, exitcode.Usage, "swdt exec works on one node, not --node winworker,other"},
		{[]string{"exec", "--node", "winworker", "hostname"}, exitcode.OK, ""},
	}
	for _, tt := range tests {
		args := append([]string{tt.args[0], "-c", file, "--no-color"}, tt.args[1:]...) // exec: swdt's flags first
		code, _, errOut := run(t, args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d (want %d), stderr %q, want %q", tt.args, code, tt.code, errOut, tt.want)
		}
	}
}

// following is swdt logs --follow of the kubelet of a simnode whose
// kubelet logs to logPath, which starts with content.
type following struct {
	t           *testing.T
	n           *simnode.Node
	out, errOut lockedBuffer
	done        chan int
	cancel      context.CancelFunc
}

const followLog = `C:\k\kubelet.log`

// startFollowing runs logs --follow of the kubelet, whose log holds
// content, with its last lines and extra args.
func startFollowing(t *testing.T, content string, lines int, extra ...string) *following {
	t.Helper()
	ts := simnode.StartTest(t)
	file := statusFile(t, ts, "", "MZ kubelet\n")
	f := &following{t: t, n: ts.Node(), done: make(chan int)}
	if err := f.n.ConfigureService("kubelet", func(cfg *simnode.ServiceConfig) {
		cfg.Args = append(cfg.Args, "--log-file", followLog)
	}); err != nil {
		t.Fatal(err)
	}
	f.write(content)
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	t.Cleanup(cancel)
	go func() {
		f.done <- Run(ctx, Streams{In: strings.NewReader(""), Out: &f.out, ErrOut: &f.errOut},
			append([]string{"logs", "-c", file, "winworker", "kubelet", "-n", strconv.Itoa(lines), "--follow", "--interval", "100ms"}, extra...))
	}()
	return f
}

// write replaces the kubelet's log file.
func (f *following) write(content string) {
	f.t.Helper()
	if err := f.n.WriteFile(followLog, []byte(content)); err != nil {
		f.t.Fatal(err)
	}
}

// waitFor waits until in (the follow's stdout or stderr) holds want,
// failing when the follow ends first or after a minute.
func (f *following) waitFor(in *lockedBuffer, want string) {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(in.String(), want) {
		if time.Now().After(deadline) {
			f.t.Fatalf("no %q in the output\nstdout: %s\nstderr: %s", want, f.out.String(), f.errOut.String())
		}
		select {
		case code := <-f.done:
			f.t.Fatalf("--follow ended (exit %d) before %q\nstdout: %s\nstderr: %s", code, want, f.out.String(), f.errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop is Ctrl-C, which must end the follow with exit 0.
func (f *following) stop() {
	f.t.Helper()
	f.cancel()
	if code := <-f.done; code != exitcode.OK {
		f.t.Fatalf("Ctrl-C ended --follow with exit %d\n%s", code, f.errOut.String())
	}
}

// --follow prints each new whole line once: a line still being written
// waits for its end, and a rotated (shorter) file is read from its start.
func TestLogsFollow(t *testing.T) {
	t.Parallel()
	f := startFollowing(t, "old 1\r\nold 2\r\nhalf", 1)
	f.waitFor(&f.out, "old 2\n")
	f.write("old 1\r\nold 2\r\nhalf a line\r\nnew 3\r\n")
	f.waitFor(&f.out, "new 3\n")
	f.write("rotated 1\r\n")
	f.waitFor(&f.out, "rotated 1\n")
	f.stop()
	if want := "old 2\nhalf a line\nnew 3\nrotated 1\n"; f.out.String() != want {
		t.Errorf("stdout = %q, want %q", f.out.String(), want)
	}
}

// TestLogsFollowFailureEndsTheStream: a read that fails while following
// (not a lost connection) ends --follow with exit 1 and, with -o json,
// its stream with a failed document that names the node and the error,
// after the documents of what it showed.
func TestLogsFollowFailureEndsTheStream(t *testing.T) {
	t.Parallel()
	f := startFollowing(t, "line 1\r\n", 5, "-o", "json")
	f.waitFor(&f.out, "line 1")
	if err := f.n.UpdateFaults(func(fl *simnode.Faults) { fl.FailOps = []string{ops.ServiceLogs.Name} }); err != nil {
		t.Fatal(err)
	}
	var code int
	select {
	case code = <-f.done:
	case <-time.After(time.Minute):
		t.Fatalf("--follow went on after its read failed\nstdout: %s\nstderr: %s", f.out.String(), f.errOut.String())
	}
	if code != exitcode.Failure {
		t.Errorf("exit %d, want %d\n%s", code, exitcode.Failure, f.errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(f.out.String()), "\n")
	var docs []map[string]any
	for _, l := range lines {
		var doc map[string]any
		if err := json.Unmarshal([]byte(l), &doc); err != nil {
			t.Fatalf("a line of the stream is not a JSON document: %v\n%s", err, f.out.String())
		}
		docs = append(docs, doc)
	}
	if len(docs) < 2 {
		t.Fatalf("want the logs' documents and the failure's, got %d:\n%s", len(docs), f.out.String())
	}
	for _, doc := range docs[:len(docs)-1] {
		if doc["result"] == "failed" {
			t.Errorf("a document before the last failed: %v", doc)
		}
	}
	last := docs[len(docs)-1]
	if last["kind"] != docs[0]["kind"] || last["result"] != "failed" || last["node"] != "winworker" {
		t.Errorf("the last document is %v, want a failed %v of node winworker", last, docs[0]["kind"])
	}
	if e, _ := last["error"].(string); !strings.Contains(e, "read the log of kubelet") || !strings.Contains(e, "injected") {
		t.Errorf("the failure's error %q does not say what failed", e)
	}
}

// TestLogsFollowAcrossAReboot: --follow goes on after the node reboots
// (the connection drops, SSH does not answer for a while), saying so,
// from where it was.
func TestLogsFollowAcrossAReboot(t *testing.T) {
	t.Parallel()
	f := startFollowing(t, "before 1\r\n", 5)
	f.waitFor(&f.out, "before 1\n")
	boots := len(f.n.Boots())
	// The machine's clock stands still while it is down, so that the
	// follow surely finds it unreachable; it moves on once swdt said so.
	base := time.Now()
	var offset atomic.Int64
	f.n.SetClock(func() time.Time { return base.Add(time.Duration(offset.Load())) })
	f.n.ScheduleRestart(0)
	f.waitFor(&f.errOut, "reconnecting")
	f.write("before 1\r\nafter the reboot\r\n")
	offset.Store(int64(time.Hour))
	f.waitFor(&f.out, "after the reboot\n")
	f.waitFor(&f.errOut, "reconnected")
	if len(f.n.Boots()) != boots+1 {
		t.Errorf("the node booted %d times, want once", len(f.n.Boots())-boots)
	}
	f.stop()
}

// A destination the service does not run fails the run with both paths
// named and changes nothing; status says what the service runs.
func TestDestinationIsNotWhatTheServiceRuns(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ts := simnode.StartTest(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubelet.exe"), []byte("MZ new kubelet"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := writeNodeFile(t, dir, nodeHeader("winworker", ts.Credentials())+`  kubernetes:
    provisioners:
    - name: kubelet
      sourceURL: ./kubelet.exe
      destination: 'C:\k\kubelet-new.exe'
`)
	before := ts.State()
	code, _, errOut := run(t, "kubernetes", "-c", file)
	if code == exitcode.OK {
		t.Fatalf("exit 0 for a provisioner that cannot work\n%s", errOut)
	}
	for _, want := range []string{`runs C:\k\kubelet.exe, not the destination C:\k\kubelet-new.exe`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	after := ts.State()
	if ts.Node().Exists(`C:\k\kubelet-new.exe`) || after.Services["kubelet"].PID != before.Services["kubelet"].PID {
		t.Errorf("the failed run changed the node")
	}
	code, out, errOut := run(t, "status", "-c", file)
	if code != exitcode.OK || !strings.Contains(out, "runs-another-file") ||
		!strings.Contains(errOut, `service kubelet runs C:\k\kubelet.exe, not the destination C:\k\kubelet-new.exe`) {
		t.Errorf("status: exit %d\n%s\n%s", code, out, errOut)
	}
}

// --node keeps the nodes it names, in its order, and shows only their
// warnings; a typo is a usage error with a suggestion, as is a typo in
// --only.
func TestNodeAndOnlySelection(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ts := simnode.StartTest(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kubelet.exe"), []byte("MZ kubelet"), 0o644); err != nil {
		t.Fatal(err)
	}
	body := `  kubernetes:
    provisioners:
    - name: kubelet
      sourceURL: ./kubelet.exe
      destination: 'C:\k\kubelet.exe'
`
	// beta's kubelet is not built here: a warning about beta.
	betaBody := strings.Replace(body, "./kubelet.exe", "./beta-kubelet.exe", 1)
	file := writeNodeFile(t, dir, nodeHeader("alpha", ts.Credentials())+body+"---\n"+nodeHeader("beta", ts.Credentials())+betaBody)
	const betaWarning = `node "beta": spec.kubernetes.provisioners[0].sourceURL: source `
	tests := []struct {
		args      []string
		wantCode  int
		wantNodes []string
		wantErr   string
		wantWarn  bool
	}{
		{[]string{"status", "-o", "json"}, exitcode.OK, []string{"alpha", "beta"}, "", true},
		{[]string{"status", "-o", "json", "--node", "beta"}, exitcode.OK, []string{"beta"}, "", true},
		{[]string{"status", "-o", "json", "--node", "alpha"}, exitcode.OK, []string{"alpha"}, "", false},
		{[]string{"status", "-o", "json", "--node", "beta,alpha", "--node", "beta"}, exitcode.OK, []string{"beta", "alpha"}, "", true},
		{[]string{"status", "--node", "alpah"}, exitcode.Usage, nil, `has no node "alpah"; did you mean "alpha"?; its nodes: alpha, beta`, false},
		{[]string{"kubernetes", "--dry-run", "--only", "kubelte"}, exitcode.Usage, nil, `kubelte (did you mean "kubelet"?); its provisioners: kubelet`, true},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, errOut := run(t, append([]string{"-c", file}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d (want %d), stderr %s (want %q)", code, tt.wantCode, errOut, tt.wantErr)
			}
			if warned := strings.Contains(errOut, betaWarning); warned != tt.wantWarn {
				t.Errorf("warning about beta's source shown: %v, want %v:\n%s", warned, tt.wantWarn, errOut)
			}
			if tt.wantNodes == nil {
				return
			}
			var doc report.Status
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range doc.Nodes {
				got = append(got, n.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.wantNodes, ",") {
				t.Errorf("nodes = %v, want %v", got, tt.wantNodes)
			}
		})
	}
}

// Two provisioners of one service (containerd and its shim, which no
// service runs as its program) are swapped in one stop and start.
func TestTwoBinariesOfOneService(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ts := simnode.StartTest(t)
	dir := t.TempDir()
	for _, name := range []string{"containerd", "shim"} {
		if err := os.WriteFile(filepath.Join(dir, name+".exe"), []byte("MZ new "+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := writeNodeFile(t, dir, nodeHeader("winworker", ts.Credentials())+`  kubernetes:
    provisioners:
    - name: containerd
      sourceURL: ./containerd.exe
      destination: 'C:\Program Files\containerd\containerd.exe'
    - name: containerd-shim
      service: containerd
      sourceURL: ./shim.exe
      destination: 'C:\Program Files\containerd\containerd-shim-runhcs-v1.exe'
`)
	code, out, errOut := run(t, "kubernetes", "-c", file, "-o", "json", "--settle", "0")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var doc report.Kubernetes
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Nodes) != 1 || len(doc.Nodes[0].Provisioners) != 2 {
		t.Fatalf("bad JSON (%v): %s", err, out)
	}
	for _, p := range doc.Nodes[0].Provisioners {
		if p.Result != "changed" {
			t.Errorf("%s: %s (%s)", p.Name, p.Result, p.Error)
		}
	}
	if n := strings.Count(errOut, "swapping: stop"); n != 1 {
		t.Errorf("%d swaps, want 1:\n%s", n, errOut)
	}
	for dest, want := range map[string]string{
		`C:\Program Files\containerd\containerd.exe`:                "MZ new containerd",
		`C:\Program Files\containerd\containerd-shim-runhcs-v1.exe`: "MZ new shim",
	} {
		if got, err := ts.Node().ReadFile(dest); err != nil || string(got) != want {
			t.Errorf("%s holds %q (%v), want %q", dest, got, err, want)
		}
	}
	if svc, _ := ts.Node().Service("containerd"); svc.Status != simnode.StatusRunning {
		t.Errorf("containerd is %s after the swap", svc.Status)
	}
}
