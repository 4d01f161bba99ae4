package remote

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/sshdtest"
)

func TestExec(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, sshdConfig(t, s))
	tests := []struct {
		name       string
		cmd        string
		stdin      string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "stdin is echoed and EOF ends cat", cmd: "cat", stdin: "line one\nline two\n", wantStdout: "line one\nline two\n"},
		{name: "no stdin", cmd: "cat", wantStdout: ""},
		{name: "exit status", cmd: "exit 3", wantCode: 3},
		{name: "stdout and stderr stay apart", cmd: "echo out; echo err >&2; exit 1", wantCode: 1, wantStdout: "out\n", wantStderr: "err\n"},
		{name: "large stdin", cmd: "wc -c", stdin: strings.Repeat("x", 1<<20), wantStdout: "1048576\n"},
		{name: "no pty", cmd: "test -t 0 || test -t 1 || echo nopty", wantStdout: "nopty\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr strings.Builder
			code, err := c.Exec(t.Context(), tt.cmd, strings.NewReader(tt.stdin), &stdout, &stderr)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if code != tt.wantCode || stdout.String() != tt.wantStdout || stderr.String() != tt.wantStderr {
				t.Errorf("Exec = %d, stdout %q, stderr %q; want %d, %q, %q", code, stdout.String(), stderr.String(), tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

func TestExecCancelReturnsPromptly(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, sshdConfig(t, s))
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Exec(ctx, "sleep 30", nil, nil, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Exec returned %s after cancel", d)
	}
	// The client is still usable.
	var out strings.Builder
	if _, err := c.Exec(t.Context(), "echo again", nil, &out, nil); err != nil || out.String() != "again\n" {
		t.Fatalf("Exec after cancel = %q, %v", out.String(), err)
	}
}

// TestExecAfterDrop: a dropped connection fails the running command
// (never retried) and the next Exec gets a fresh connection.
func TestExecAfterDrop(t *testing.T) {
	s := sshdtest.Start(t)
	p := sshdtest.StartProxy(t, s.Addr, 0, 0)
	cfg := sshdConfig(t, s)
	cfg.Host = p.Addr
	c := dial(t, cfg)

	time.AfterFunc(300*time.Millisecond, p.CutAll)
	_, err := c.Exec(t.Context(), "sleep 10; echo done", nil, nil, nil)
	if !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("want ErrConnectionLost, got %v", err)
	}
	var out strings.Builder
	if _, err := c.Exec(t.Context(), "echo fresh", nil, &out, nil); err != nil || out.String() != "fresh\n" {
		t.Fatalf("Exec after drop = %q, %v", out.String(), err)
	}
	if n := p.Connections(); n != 2 {
		t.Errorf("proxy saw %d connections, want 2", n)
	}

	// A drop noticed while idle is replaced before the next session opens
	// (the session opened ahead went with it).
	c.mu.Lock()
	cn := c.cur
	c.mu.Unlock()
	p.CutAll()
	if !cn.deadWithin(10 * time.Second) {
		t.Fatal("the client did not notice the dropped connection")
	}
	out.Reset()
	if _, err := c.Exec(t.Context(), "echo idle", nil, &out, nil); err != nil || out.String() != "idle\n" {
		t.Fatalf("Exec after idle drop = %q, %v", out.String(), err)
	}
}

// TestSpareSession: a command's channel is opened ahead, while the one
// before runs, and serves the next command; one kept beyond spareFresh,
// on a connection not heard from within heardWithin, is closed rather
// than trusted to stand for a live connection. (No keepalives: the test
// sets when the node was last heard from.)
func TestSpareSession(t *testing.T) {
	s := sshdtest.Start(t)
	cfg := sshdConfig(t, s)
	cfg.KeepAliveInterval = -1
	c := dial(t, cfg)
	for i, want := range []string{"one\n", "two\n"} {
		var out strings.Builder
		if _, err := c.Exec(t.Context(), "echo "+strings.TrimSpace(want), nil, &out, nil); err != nil || out.String() != want {
			t.Fatalf("Exec %d = %q, %v", i, out.String(), err)
		}
	}
	c.mu.Lock()
	cn := c.cur
	c.mu.Unlock()
	sess := cn.takeSpare()
	if sess == nil {
		t.Fatal("no session was opened ahead after a command")
	}
	if out, err := sess.Output("echo spare"); err != nil || string(out) != "spare\n" {
		t.Fatalf("the spare session ran %q, %v", out, err)
	}
	if cn.takeSpare() != nil {
		t.Fatal("a spare was handed out twice")
	}
	c.OpenSessionAhead()
	if sess := cn.takeSpare(); sess == nil {
		t.Fatal("OpenSessionAhead opened no session")
	} else {
		sess.Close()
	}

	cn.openSpare()
	age := func() {
		cn.spareMu.Lock()
		ch := cn.spare
		cn.spareMu.Unlock()
		sp := <-ch
		sp.opened = sp.opened.Add(-2 * spareFresh)
		ch <- sp
	}
	heard := func(ago time.Duration) { cn.clock.last.Store(time.Now().Add(-ago).UnixNano()) }
	age()
	heard(0)
	if sess := cn.takeSpare(); sess == nil {
		t.Fatal("a spare older than spareFresh was not handed out on a connection just heard from")
	} else {
		sess.Close()
	}
	cn.openSpare()
	age()
	heard(2 * heardWithin)
	if cn.takeSpare() != nil {
		t.Fatal("a spare older than spareFresh was handed out on a connection not heard from")
	}
	// Asked for ahead, an old spare is replaced.
	cn.openSpare()
	age()
	c.OpenSessionAhead()
	if sess := cn.takeSpare(); sess == nil {
		t.Fatal("OpenSessionAhead kept a spare older than spareFresh")
	} else {
		sess.Close()
	}
}

// TestStartAheadWaitsAcrossIdle: a command started ahead and left waiting
// for longer than spareFresh and heardWithin together (--watch between
// two rebuilds) is kept when asked for again and taken by the Exec that
// follows, because the keepalive keeps hearing from the node meanwhile:
// the command's output shows it started before the wait.
func TestStartAheadWaitsAcrossIdle(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, sshdConfig(t, s))
	const cmd = `date +%s%N; cat`
	c.StartAhead(cmd)
	asked := time.Now()
	// The idle time of a developer between two builds is what is tested.
	time.Sleep(spareFresh + heardWithin)
	c.StartAhead(cmd) // as --watch asks again once the change is seen
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var out strings.Builder
	if code, err := c.Exec(ctx, cmd, strings.NewReader("input\n"), &out, nil); err != nil || code != 0 {
		t.Fatalf("Exec = %d, %v", code, err)
	}
	first, rest, _ := strings.Cut(out.String(), "\n")
	ns, err := strconv.ParseInt(first, 10, 64)
	if err != nil || rest != "input\n" {
		t.Fatalf("output %q, want the start time and the input", out.String())
	}
	if started := time.Unix(0, ns); started.After(asked.Add(spareFresh)) {
		t.Errorf("the command ran from %s, %s after it was first asked for: a new one, not the one started ahead",
			started.Format(time.StampMilli), started.Sub(asked))
	}
}

// TestKeepAliveDetectsFrozenLink: a link that silently stops carrying
// packets is declared dead by keepalives and the next call reconnects.
func TestKeepAliveDetectsFrozenLink(t *testing.T) {
	s, p, c := dialThroughProxy(t, 100*time.Millisecond)
	if err := c.Reconnect(t.Context()); err != nil { // exercise Reconnect too
		t.Fatal(err)
	}
	p.FreezeAll()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if _, err := c.Stat(ctx, s.Dir); err != nil {
		t.Fatalf("Stat across a frozen link: %v", err)
	}
	if n := p.Connections(); n != 3 {
		t.Errorf("proxy saw %d connections, want 3", n)
	}
}

// TestKeepAliveCountsWhatArrives: the keepalive judges a connection by
// what arrives, as OpenSSH's ServerAliveCountMax does. Through a link that
// stopped carrying the client's packets (its keepalives among them), a
// command's output that keeps arriving, for many times the keepalive
// limit, keeps the connection open to its end.
func TestKeepAliveCountsWhatArrives(t *testing.T) {
	_, p, c := dialThroughProxy(t, 200*time.Millisecond)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// 40 lines 50 ms apart: 2 s of output, the limit is 0.6 s.
	const script = `echo start; i=0; while [ $i -lt 40 ]; do sleep 0.05; echo $i; i=$((i+1)); done`
	out := &muteOnFirstLine{mute: p.MuteAll}
	var stderr strings.Builder
	code, err := c.Exec(ctx, script, nil, out, &stderr)
	if err != nil || code != 0 {
		t.Fatalf("Exec through a muted link = %d, %v (stderr %q)", code, err, stderr.String())
	}
	if lines := strings.Count(out.b.String(), "\n"); lines != 41 {
		t.Errorf("got %d lines of output, want 41:\n%s", lines, out.b.String())
	}
	if n := p.Connections(); n != 1 {
		t.Errorf("proxy saw %d connections, want 1", n)
	}
}

// dialThroughProxy dials a test sshd through a proxy that can freeze or
// mute the link, with keepalives every interval.
func dialThroughProxy(t *testing.T, interval time.Duration) (*sshdtest.Server, *sshdtest.Proxy, *Client) {
	t.Helper()
	s := sshdtest.Start(t)
	p := sshdtest.StartProxy(t, s.Addr, 0, 0)
	cfg := sshdConfig(t, s)
	cfg.Host = p.Addr
	cfg.KeepAliveInterval = interval
	return s, p, dial(t, cfg)
}

// muteOnFirstLine collects output and calls mute once the first line is in.
type muteOnFirstLine struct {
	mute  func()
	b     strings.Builder
	muted bool
}

func (w *muteOnFirstLine) Write(p []byte) (int, error) {
	w.b.Write(p)
	if !w.muted && strings.Contains(w.b.String(), "\n") {
		w.muted = true
		w.mute()
	}
	return len(p), nil
}

// TestRTT: the round-trip time is measured (a keepalive request, which
// OpenSSH answers) once connected, and unknown once closed.
func TestRTT(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, sshdConfig(t, s))
	defer func() {
		c.Close()
		if _, ok := c.RTT(); ok {
			t.Error("RTT known after Close")
		}
	}()
	// The probe runs beside the first op: WaitRTT waits for its answer.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	rtt, ok := c.WaitRTT(ctx)
	if !ok || rtt <= 0 {
		t.Fatalf("WaitRTT = %s, %v", rtt, ok)
	}
	if again, ok := c.RTT(); !ok || again != rtt {
		t.Errorf("RTT = %s, %v after WaitRTT %s", again, ok, rtt)
	}
}

// TestStartAhead: a command started ahead serves the Exec of the same
// command line (which then only sends its input), not another command's;
// one started longer than spareFresh ago is closed and the command runs
// on a session of its own.
func TestStartAhead(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, sshdConfig(t, s))
	log := s.Dir + "/started.log"
	cmd := "echo started >> " + log + "; cat"
	c.mu.Lock()
	cn := c.cur
	c.mu.Unlock()
	run := func(cmd, in string) string {
		t.Helper()
		var out strings.Builder
		code, err := c.Exec(t.Context(), cmd, strings.NewReader(in), &out, nil)
		if err != nil || code != 0 {
			t.Fatalf("Exec(%q) = %d, %v", cmd, code, err)
		}
		return out.String()
	}
	held := func() string {
		cn.spareMu.Lock()
		defer cn.spareMu.Unlock()
		if cn.ahead == nil {
			return ""
		}
		return cn.ahead.cmd
	}

	// started sets when the command held ahead started, to at(when it
	// did).
	started := func(at func(time.Time) time.Time) {
		t.Helper()
		cn.spareMu.Lock()
		a := cn.ahead
		cn.spareMu.Unlock()
		st := <-a.ready
		if st == nil {
			t.Fatal("the command could not be started ahead")
		}
		st.started = at(st.started)
		a.ready <- st
	}
	// fresh makes the command held ahead as if started just now: on a
	// loaded machine the steps between its start and its Exec may take
	// longer than spareFresh, which is not what these cases are about.
	fresh := func() {
		t.Helper()
		started(func(time.Time) time.Time { return time.Now() })
	}

	c.StartAhead(cmd)
	fresh()
	if got := run(cmd, "hello"); got != "hello" {
		t.Fatalf("the command started ahead printed %q, want its input", got)
	}
	if held() != "" {
		t.Fatal("the command started ahead is still held after its Exec")
	}

	c.StartAhead(cmd)
	if got := run("echo other", ""); got != "other\n" {
		t.Fatalf("another command printed %q", got)
	}
	if held() != cmd {
		t.Fatal("another command's Exec took the command started ahead")
	}
	fresh()
	if got := run(cmd, "again"); got != "again" || held() != "" {
		t.Fatalf("the command started ahead printed %q after another command (still held: %q)", got, held())
	}
	if out := run("cat "+log, ""); out != "started\nstarted\n" {
		t.Fatalf("the commands started were %q: an Exec did not use the one started ahead", out)
	}

	// Started more than spareFresh ago: closed, and a session of its own.
	c.StartAhead(cmd)
	started(func(at time.Time) time.Time { return at.Add(-2 * spareFresh) })
	if got := run(cmd, "fresh"); got != "fresh" || held() != "" {
		t.Fatalf("after a stale start the command printed %q (still held: %q)", got, held())
	}

	// A spare older than spareFresh serves a command started ahead: the
	// command only waits for its input, and its exec's reply says the
	// connection lives.
	cn.openSpare()
	cn.spareMu.Lock()
	ch := cn.spare
	cn.spareMu.Unlock()
	sp := <-ch
	stale := sp.s
	sp.opened = sp.opened.Add(-2 * spareFresh)
	ch <- sp
	c.StartAhead(cmd)
	cn.spareMu.Lock()
	a := cn.ahead
	cn.spareMu.Unlock()
	if st := <-a.ready; st == nil || st.s != stale {
		t.Fatal("the command started ahead did not take the old spare")
	} else {
		a.ready <- st
	}
	if got := run(cmd, "on the old spare"); got != "on the old spare" {
		t.Fatalf("the command started on the old spare printed %q", got)
	}

	// One command is held: a newer one replaces it.
	c.StartAhead(cmd)
	c.StartAhead("cat")
	if held() != "cat" {
		t.Fatalf("held %q, want the newer command", held())
	}
	if got := run("cat", "last"); got != "last" {
		t.Fatalf("the newer command printed %q", got)
	}
}
