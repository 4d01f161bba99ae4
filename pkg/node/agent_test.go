package node_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agentbin"
	"sigs.k8s.io/swdt/pkg/hashcache"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/remote"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// countingConn counts the bytes uploaded through it and may corrupt them,
// or hold an upload until its context ends (stall).
type countingConn struct {
	*remote.Client
	sent    atomic.Int64
	corrupt bool
	stall   bool
}

func (c *countingConn) UploadStream(ctx context.Context, open func() (io.ReadCloser, error), remotePath string, progress func(int64)) (int64, error) {
	if c.stall {
		<-ctx.Done()
		return 0, ctx.Err()
	}
	src, err := open()
	if err != nil {
		return 0, err
	}
	data, err := io.ReadAll(src)
	src.Close()
	if err != nil {
		return 0, err
	}
	c.sent.Add(int64(len(data)))
	if c.corrupt {
		data[len(data)/2] ^= 0xff
	}
	return c.Client.UploadStream(ctx, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, remotePath, progress)
}

func dial(t *testing.T, ts *simnode.TestServer) *countingConn {
	t.Helper()
	cfg, err := node.RemoteConfig(ts.Credentials())
	if err != nil {
		t.Fatal(err)
	}
	cfg.SSHConfigFile = "none"
	c, err := remote.Dial(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &countingConn{Client: c}
}

func embeddedAgent(t *testing.T) agentbin.Agent {
	t.Helper()
	a, err := agentbin.For("amd64")
	if err != nil {
		t.Fatalf("%v (run `make agent` before go test)", err)
	}
	return a
}

// The agent goes to the node once per version: the first contact uploads
// and verifies it and removes older versions, later ones send nothing and
// say so at -v.
func TestAgentUploadedOncePerVersion(t *testing.T) {
	ts := simnode.StartTest(t)
	a := embeddedAgent(t)
	old := ops.AgentDir + `\swdt-agent-00000000deadbeef.exe`
	if err := ts.Node().MkdirAll(ops.AgentDir); err != nil {
		t.Fatal(err)
	}
	if err := ts.Node().WriteFile(old, []byte("MZ an older swdt-agent")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var log1 bytes.Buffer
	first := dial(t, ts)
	if _, err := node.New("winworker", first, slog.New(slog.NewTextHandler(&log1, nil))).Facts(ctx); err != nil {
		t.Fatal(err)
	}
	if got := first.sent.Load(); got != int64(len(a.Binary)) {
		t.Errorf("first contact sent %d bytes, want the agent's %d", got, len(a.Binary))
	}
	if !strings.Contains(log1.String(), "swdt-agent uploaded") {
		t.Errorf("first contact's -v log does not say the agent was uploaded:\n%s", log1.String())
	}
	if got, _, err := ts.Node().Hash(ops.AgentPath(a.SHA256)); err != nil || got != a.SHA256 {
		t.Errorf("agent on the node: sha256 %s, err %v; want %s", got, err, a.SHA256)
	}
	if ts.Node().Exists(old) {
		t.Error("the older agent version was not removed")
	}

	var log2 bytes.Buffer
	second := dial(t, ts)
	n := node.New("winworker", second, slog.New(slog.NewTextHandler(&log2, nil)))
	for range 2 {
		if _, err := n.Facts(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := second.sent.Load(); got != 0 {
		t.Errorf("second contact sent %d agent bytes, want 0", got)
	}
	if !strings.Contains(log2.String(), "swdt-agent is on the node and verified, nothing sent") {
		t.Errorf("second contact's -v log does not say the agent was reused:\n%s", log2.String())
	}
}

// Several connections that meet a machine without the agent at the same
// time (the VMs of one Hyper-V host) take turns: one uploads it, the
// others find it in place and run their op with it.
func TestAgentDeliveredByManyAtOnce(t *testing.T) {
	ts := simnode.StartTest(t)
	a := embeddedAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conns := make([]*countingConn, 4)
	for i := range conns {
		conns[i] = dial(t, ts)
	}
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			_, errs[i] = node.New("winworker", c, nil).Facts(ctx)
		})
	}
	wg.Wait()
	var sent int64
	for i, err := range errs {
		if err != nil {
			t.Errorf("connection %d: %v", i, err)
		}
		sent += conns[i].sent.Load()
	}
	if sent != int64(len(a.Binary)) {
		t.Errorf("the connections sent %d agent bytes, want one upload of %d", sent, len(a.Binary))
	}
	entries, err := ts.Node().List(ops.AgentDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name)
	}
	if want := ops.AgentPath(a.SHA256)[len(ops.AgentDir)+1:]; len(names) != 1 || !strings.EqualFold(names[0], want) {
		t.Errorf("%s holds %v, want only %s", ops.AgentDir, names, want)
	}
}

// What this process uploads is not read back (SSH's integrity check
// covers the bytes on their way). An upload that is not the agent all the
// same (corrupted here before it is sent) does not pass as the agent: its
// first run answers as no agent does, the error says what happens next,
// and the next delivery reads the file back, removes it and uploads the
// agent again.
func TestCorruptedAgentUploadIsReplaced(t *testing.T) {
	ts := simnode.StartTest(t)
	a := embeddedAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &readBackConn{countingConn: dial(t, ts), path: ops.AgentPath(a.SHA256)}
	c.corrupt = true
	cache := hashcache.Open(filepath.Join(t.TempDir(), "node.json"))
	n := node.New("winworker", c, nil)
	n.RememberAgent(cache)
	_, err := n.Facts(ctx)
	if err == nil || !strings.Contains(err.Error(), "just uploaded") || !strings.Contains(err.Error(), "reads it back") {
		t.Fatalf("err = %v, want the op's failure saying the upload is read back next", err)
	}
	if got := c.reads.Load(); got != 0 {
		t.Errorf("the upload was read back %d times before it ran, want 0", got)
	}
	if rec := cache.Known(c.path); rec == nil || rec.ModTicks != -1 {
		t.Errorf("agent record %+v, want it spoiled", rec)
	}
	c.corrupt = false
	if _, err := n.Facts(ctx); err != nil {
		t.Fatalf("next run: %v", err)
	}
	if got := c.reads.Load(); got != 1 {
		t.Errorf("the next run read the file back %d times, want 1", got)
	}
	if got := c.sent.Load(); got != 2*int64(len(a.Binary)) {
		t.Errorf("sent %d bytes, want the agent twice (%d)", got, 2*len(a.Binary))
	}
	if got, _, err := ts.Node().Hash(c.path); err != nil || got != a.SHA256 {
		t.Errorf("agent on the node: sha256 %s, err %v; want %s", got, err, a.SHA256)
	}
}

// A node where the agent's upload makes no progress does not hang swdt:
// the delivery is bounded and says what did not answer.
func TestAgentDeliveryIsBounded(t *testing.T) {
	ts := simnode.StartTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c := dial(t, ts)
	c.stall = true
	_, err := node.New("winworker", c, nil).Facts(ctx)
	var te *node.TimeoutError
	if !errors.As(err, &te) || te.Op != "deliver swdt-agent" || !strings.Contains(err.Error(), "node winworker") {
		t.Fatalf("err = %v, want a *node.TimeoutError for the delivery", err)
	}
}

// BenchmarkAgentOp is the cost of one op once the agent is on the node:
// an SSH session, the agent's command line, the JSON request and result
// (on simnode the agent runs in-process, so no process start is in it).
func BenchmarkAgentOp(b *testing.B) {
	ts := simnode.StartTest(b)
	cfg, err := node.RemoteConfig(ts.Credentials())
	if err != nil {
		b.Fatal(err)
	}
	cfg.SSHConfigFile = "none"
	c, err := remote.Dial(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	n := node.New("winworker", c, nil)
	ctx := context.Background()
	if _, err := n.Facts(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := n.Facts(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// A file of the agent's exact size at the agent's path, but with other
// bytes, is never run: it is read back, found not to be the agent,
// replaced by an upload, and only then does an op run. So too when this
// process verified the agent on another machine at the same address (a
// VM made again there, with another host key).
func TestAgentOfRightSizeButOtherBytesIsNeverRun(t *testing.T) {
	tests := []struct {
		name string
		// earlier is whether the process first verified the agent on
		// another machine at the address.
		earlier bool
	}{
		{name: "first contact"},
		{name: "address of a machine verified before", earlier: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			addr := "winworker-" + strings.ReplaceAll(tt.name, " ", "-") + ":22"
			if tt.earlier {
				before := &addrConn{countingConn: dial(t, simnode.StartTest(t)), addr: addr}
				if _, err := node.New("winworker", before, nil).Facts(ctx); err != nil {
					t.Fatal(err)
				}
			}
			ts := simnode.StartTest(t)
			a := embeddedAgent(t)
			path := ops.AgentPath(a.SHA256)
			fake := bytes.Clone(a.Binary)
			fake[len(fake)/3] ^= 0x5a
			if err := ts.Node().MkdirAll(ops.AgentDir); err != nil {
				t.Fatal(err)
			}
			if err := ts.Node().WriteFile(path, fake); err != nil {
				t.Fatal(err)
			}
			c := &addrConn{countingConn: dial(t, ts), addr: addr}
			if _, err := node.New("winworker", c, nil).Facts(ctx); err != nil {
				t.Fatal(err)
			}
			if got := ts.UntrustedRuns(); len(got) != 0 {
				t.Errorf("ran %v, which is not swdt-agent", got)
			}
			if got := c.sent.Load(); got != int64(len(a.Binary)) {
				t.Errorf("sent %d bytes, want the agent uploaded again (%d)", got, len(a.Binary))
			}
			if got, _, err := ts.Node().Hash(path); err != nil || got != a.SHA256 {
				t.Errorf("agent on the node: sha256 %s, err %v; want %s", got, err, a.SHA256)
			}
		})
	}
}

// addrConn is a connection that gives the address addr, whichever
// machine it reaches.
type addrConn struct {
	*countingConn
	addr string
}

func (c *addrConn) Addr() string { return c.addr }

// readBackConn counts the downloads of one file and the looks at the
// folder that tells arm64 Windows.
type readBackConn struct {
	*countingConn
	path     string
	reads    atomic.Int64
	armLooks atomic.Int64
}

func (c *readBackConn) Stat(ctx context.Context, remotePath string) (fs.FileInfo, error) {
	if strings.EqualFold(remotePath, `C:\Windows\SysArm32`) {
		c.armLooks.Add(1)
	}
	return c.countingConn.Stat(ctx, remotePath)
}

func (c *readBackConn) Download(ctx context.Context, remotePath string, w io.Writer) error {
	if strings.EqualFold(remotePath, c.path) {
		c.reads.Add(1)
	}
	return c.countingConn.Download(ctx, remotePath, w)
}

func (c *readBackConn) DownloadLean(ctx context.Context, remotePath string, w io.Writer) error {
	if strings.EqualFold(remotePath, c.path) {
		c.reads.Add(1)
	}
	return c.countingConn.DownloadLean(ctx, remotePath, w)
}

// An agent an earlier process read back is not read back again while the
// node reports the size and time it had then (nor is the node's
// architecture looked at again); any other record, or none, means reading
// it back, and the cache then holds what was verified.
func TestAgentVerifiedByAnEarlierRun(t *testing.T) {
	a := embeddedAgent(t)
	path := ops.AgentPath(a.SHA256)
	tests := []struct {
		name string
		// record makes the cache's record of the file found on the
		// node (nil: none).
		record    func(found ops.FileInfo) *ops.FileInfo
		wantReads int64
	}{
		{name: "same size and time: trusted", record: func(f ops.FileInfo) *ops.FileInfo { return &f }},
		{name: "no record: read back", wantReads: 1},
		{name: "another time: read back", wantReads: 1,
			record: func(f ops.FileInfo) *ops.FileInfo { f.ModTicks += int64(time.Second); return &f }},
		{name: "another agent's digest: read back", wantReads: 1,
			record: func(f ops.FileInfo) *ops.FileInfo { f.SHA256 = strings.Repeat("0", 64); return &f }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			if err := ts.Node().MkdirAll(ops.AgentDir); err != nil {
				t.Fatal(err)
			}
			if err := ts.Node().WriteFile(path, a.Binary); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := &readBackConn{countingConn: dial(t, ts), path: path}
			fi, err := c.Stat(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			found := ops.FileInfo{Path: path, Exists: true, Size: fi.Size(), SHA256: a.SHA256, ModTicks: fi.ModTime().UnixNano()}
			cache := hashcache.Open(filepath.Join(t.TempDir(), "node.json"))
			if tt.record != nil {
				cache.Remember(path, *tt.record(found))
			}
			n := node.New("winworker", c, nil)
			n.RememberAgent(cache)
			if _, err := n.Facts(ctx); err != nil {
				t.Fatal(err)
			}
			if got := c.reads.Load(); got != tt.wantReads {
				t.Errorf("the agent was read back %d times, want %d", got, tt.wantReads)
			}
			if got := c.armLooks.Load(); got != tt.wantReads {
				t.Errorf("looked for the arm64 folder %d times, want %d", got, tt.wantReads)
			}
			if got := c.sent.Load(); got != 0 {
				t.Errorf("sent %d bytes, want the agent found in place", got)
			}
			// The agent's first report makes the record's time precise.
			want := found
			if st, err := ts.Node().Stat(path); err == nil {
				want.ModTicks = st.ModTime.UnixNano()
			}
			if got := cache.Known(path); got == nil || *got != want {
				t.Errorf("cache holds %+v, want %+v", got, want)
			}
		})
	}
}

// The record keeps the agent file's time at full precision, though SFTP
// shows whole seconds: a change within the recorded second is trusted
// once (nothing sooner can see it), then the record is spoiled and the
// next process reads the file back.
func TestAgentRecordFullPrecision(t *testing.T) {
	a := embeddedAgent(t)
	path := ops.AgentPath(a.SHA256)
	ts := simnode.StartTest(t)
	if err := ts.Node().MkdirAll(ops.AgentDir); err != nil {
		t.Fatal(err)
	}
	if err := ts.Node().WriteFile(path, a.Binary); err != nil {
		t.Fatal(err)
	}
	written := time.Date(2026, 11, 28, 10, 0, 0, 250_000_000, time.UTC)
	if err := ts.Node().SetModTime(path, written); err != nil {
		t.Fatal(err)
	}
	cache := hashcache.Open(filepath.Join(t.TempDir(), "node.json"))
	process := func(wantReads int64) {
		t.Helper()
		c := process(t, ts, cache, path)
		if got := c.reads.Load(); got != wantReads {
			t.Errorf("the agent was read back %d times, want %d", got, wantReads)
		}
	}
	recorded := func() int64 {
		if rec := cache.Known(path); rec != nil {
			return rec.ModTicks
		}
		return 0
	}

	process(1)
	if got := recorded(); got != written.UnixNano() {
		t.Fatalf("record's time %d, want the file's to the nanosecond %d", got, written.UnixNano())
	}
	changed := written.Add(300 * time.Millisecond)
	if err := ts.Node().SetModTime(path, changed); err != nil {
		t.Fatal(err)
	}
	process(0)
	if got := recorded(); got != -1 {
		t.Errorf("record's time %d after the agent reported %s, want it spoiled", got, changed)
	}
	process(1)
	if got := recorded(); got != changed.UnixNano() {
		t.Errorf("record's time %d after reading back, want %d", got, changed.UnixNano())
	}
}

// An agent this process uploads is recorded without a read back: the
// record takes its time from the agent's first report, and the next
// process trusts it unread; a first report of another size spoils it.
func TestUploadedAgentRecord(t *testing.T) {
	a := embeddedAgent(t)
	path := ops.AgentPath(a.SHA256)
	ts := simnode.StartTest(t)
	cache := hashcache.Open(filepath.Join(t.TempDir(), "node.json"))
	first := process(t, ts, cache, path)
	if got := first.reads.Load(); got != 0 {
		t.Errorf("the upload was read back %d times, want 0", got)
	}
	st, err := ts.Node().Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	want := ops.FileInfo{Path: path, Exists: true, Size: int64(len(a.Binary)), SHA256: a.SHA256, ModTicks: st.ModTime.UnixNano()}
	if got := cache.Known(path); got == nil || *got != want {
		t.Fatalf("record after the upload %+v, want %+v", got, want)
	}
	next := process(t, ts, cache, path)
	if r, s := next.reads.Load(), next.sent.Load(); r != 0 || s != 0 {
		t.Errorf("next process read the agent back %d times and sent %d bytes, want neither", r, s)
	}

	// A record still waiting for its time, whose first report gives
	// another size, is spoiled.
	pending := want
	pending.ModTicks, pending.Size = 0, want.Size+1
	cache.Remember(path, pending)
	process(t, ts, cache, path)
	if got := cache.Known(path); got == nil || got.ModTicks != -1 {
		t.Errorf("record %+v after a report of another size, want it spoiled", got)
	}
}

// process is one swdt process's first op on the node, with the agent cache
// cache; its connection counts the read backs of the agent at path.
func process(t *testing.T, ts *simnode.TestServer, cache *hashcache.File, path string) *readBackConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &readBackConn{countingConn: dial(t, ts), path: path}
	n := node.New("winworker", c, nil)
	n.RememberAgent(cache)
	if _, err := n.Facts(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// aheadSpy records the commands started ahead through it, and holds the
// first Exec of gate until release is closed, telling running once it
// began.
type aheadSpy struct {
	*remote.Client
	gate             string
	running, release chan struct{}
	held             sync.Once
	mu               sync.Mutex
	ahead            []string
}

func (s *aheadSpy) StartAhead(cmd string) {
	s.mu.Lock()
	s.ahead = append(s.ahead, cmd)
	s.mu.Unlock()
	s.Client.StartAhead(cmd)
}

func (s *aheadSpy) Exec(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if cmd == s.gate {
		s.held.Do(func() {
			close(s.running)
			<-s.release
		})
	}
	return s.Client.Exec(ctx, cmd, stdin, stdout, stderr)
}

func (s *aheadSpy) started() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ahead)
}

// An op asked to start ahead while an op of its name runs is not started:
// the run it was for went first (its agent check returned to both at
// once), and a program started now would wait on the node for nothing.
// Once the op is done, one is started for the next run.
func TestPrepareOpLeavesTheRunningOp(t *testing.T) {
	ts := simnode.StartTest(t)
	a := embeddedAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spy := &aheadSpy{Client: dial(t, ts).Client, gate: ops.CommandLine(ops.AgentPath(a.SHA256), ops.NodeFacts.Name),
		running: make(chan struct{}), release: make(chan struct{})}
	n := node.New("winworker", spy, nil)
	if err := n.PrepareAgent(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := n.Facts(ctx)
		done <- err
	}()
	<-spy.running
	n.PrepareOp(ops.NodeFacts.Name)
	if got := spy.started(); got != 0 {
		t.Errorf("PrepareOp while the op runs started %d commands ahead, want none", got)
	}
	close(spy.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n.PrepareOp(ops.NodeFacts.Name)
	if got := spy.started(); got != 1 {
		t.Errorf("PrepareOp once the op was done started %d commands ahead, want 1 (for the next run)", got)
	}
	if _, err := n.Facts(ctx); err != nil {
		t.Fatalf("the op started ahead: %v", err)
	}
}
