package provision

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/syncbuf"
	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/remote"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/source"
)

// TestWatchKeepsConnection runs --watch against a simnode: rebuilds are
// swapped on the connection of the first run (the simnode counts its
// connections), and a rebuild after the connection dropped is swapped on
// a new one.
func TestWatchKeepsConnection(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithDelays(simnode.Delays{}))
	dir := t.TempDir()
	src := filepath.Join(dir, "kubelet.exe")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(src, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("MZ kubelet v1\n")
	w := startWatch(t, ts, src, dir, nil, hotswap.Transfer{})
	next := func(what string) { w.next(t, what) }
	next("first run")
	first := ts.Connections()
	for i := 2; i <= 3; i++ {
		write(fmt.Sprintf("MZ kubelet rebuild %d\n", i))
		next(fmt.Sprintf("rebuild %d", i))
	}
	if got := ts.Connections(); got != first {
		t.Errorf("two rebuilds opened %d new connections, want none", got-first)
	}
	ts.DropConnections()
	write("MZ kubelet after the drop\n")
	next("rebuild after the connection dropped")
	if got := ts.Connections(); got != first+1 {
		t.Errorf("the rebuild after the drop opened %d connections, want 1", got-first)
	}
	if got, err := ts.Node().ReadFile(`C:\k\kubelet.exe`); err != nil || string(got) != "MZ kubelet after the drop\n" {
		t.Errorf("the node's kubelet.exe holds %q (%v)", got, err)
	}
	w.stop(t)
}

// TestWatchRebuildInOneOp: under --watch on a link patches are sent over,
// a rebuild's patch is made while its source is hashed and its swap op is
// started while the patch is made: the rebuild is one op, started ahead,
// and no inspect.
func TestWatchRebuildInOneOp(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithDelays(simnode.Delays{}))
	dir := t.TempDir()
	src := filepath.Join(dir, "kubelet.exe")
	build := func(i int) []byte {
		return []byte(strings.Repeat("MZ the kubelet, a build of many lines\n", 200) + fmt.Sprintf("build %d\n", i))
	}
	write := func(i int) {
		t.Helper()
		if err := os.WriteFile(src, build(i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	var log syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// A fixed level sends patches on loopback too.
	w := startWatch(t, ts, src, dir, logger, hotswap.Transfer{Compress: delta.Mode{Level: delta.LevelFastest}, Store: &delta.Store{Dir: filepath.Join(dir, "cache", "sent")}})
	w.next(t, "first run")
	for i := 2; i <= 3; i++ {
		mark := len(log.String())
		write(i)
		if got := w.next(t, fmt.Sprintf("rebuild %d", i)); got.Transfer != hotswap.TransferPatch {
			t.Fatalf("rebuild %d went %s, want a patch", i, got.Transfer)
		}
		lines := log.String()[mark:]
		if n := strings.Count(lines, "msg=\"run op\""); n != 1 || !strings.Contains(lines, "op=service-swap") {
			t.Errorf("rebuild %d ran %d ops, want the swap op alone:\n%s", i, n, lines)
		}
		if !strings.Contains(lines, "started ahead") {
			t.Errorf("rebuild %d: its swap op was not started ahead:\n%s", i, lines)
		}
		if got, err := ts.Node().ReadFile(`C:\k\kubelet.exe`); err != nil || string(got) != string(build(i)) {
			t.Fatalf("rebuild %d: the node's kubelet.exe holds %d bytes (%v)", i, len(got), err)
		}
	}
	w.stop(t)
}

// TestWatchHoldsTheNextSwapOp: after each run, --watch starts the swap
// op of the next rebuild, and it waits on the node for however long the
// next build takes: a rebuild that comes after more than the transport
// trusts without hearing from the node (spareFresh and heardWithin, 3 s)
// starts no command when it is seen, and runs its swap on the one held.
func TestWatchHoldsTheNextSwapOp(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithDelays(simnode.Delays{}))
	dir := t.TempDir()
	src := filepath.Join(dir, "kubelet.exe")
	write := func(i int) {
		t.Helper()
		if err := os.WriteFile(src, []byte(fmt.Sprintf("MZ the kubelet, build %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	var log syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w := startWatch(t, ts, src, dir, logger, hotswap.Transfer{})
	w.next(t, "first run")
	held := func() bool { return strings.Contains(log.String(), "ssh start ahead") }
	for deadline := time.Now().Add(30 * time.Second); !held(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no swap op was started for the next rebuild after the first run:\n%s", log.String())
		}
	}
	// The developer's build time is what is tested.
	time.Sleep(3500 * time.Millisecond)
	mark := len(log.String())
	write(2)
	w.next(t, "rebuild")
	lines := log.String()[mark:]
	exec := strings.Index(lines, "ssh exec, started ahead")
	if exec < 0 {
		t.Fatalf("the rebuild's swap did not run on a command started ahead:\n%s", lines)
	}
	if strings.Contains(lines[:exec], "ssh start ahead") {
		t.Errorf("the rebuild started its swap op when it was seen, not the one held since the run before:\n%s", lines)
	}
	w.stop(t)
}

// watching is a --watch run of the kubelet built at src on ts.
type watching struct {
	reports chan []fleet.Result[NodeReport]
	done    chan error
	cancel  context.CancelFunc
}

// startWatch starts --watch of the kubelet built at src on ts, with its
// cache under dir, logging to logger (nil: nowhere) and transfer's
// settings.
func startWatch(t *testing.T, ts *simnode.TestServer, src, dir string, logger *slog.Logger, transfer hotswap.Transfer) *watching {
	t.Helper()
	nodes := []v1alpha1.Node{{}}
	nodes[0].Name = "sim"
	nodes[0].Spec.Credentials = ts.Credentials()
	nodes[0].Spec.Kubernetes.Provisioners = []v1alpha1.ProvisionerSpec{{Name: "kubelet", SourceURL: src, Destination: `C:\k\kubelet.exe`}}
	connect := func(ctx context.Context, spec *v1alpha1.Node, warn func(string)) (*node.Node, error) {
		return node.Connect(ctx, *spec, node.ConnectOptions{Warn: warn, Logger: logger})
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &watching{reports: make(chan []fleet.Result[NodeReport], 10), done: make(chan error, 1), cancel: cancel}
	t.Cleanup(cancel)
	go func() {
		w.done <- Run(ctx, nodes, connect, Options{
			Watch: true, Debounce: 20 * time.Millisecond, CacheDir: filepath.Join(dir, "cache"),
			Resolver: &source.Resolver{CacheDir: filepath.Join(dir, "cache")},
			Swap:     hotswap.Options{Settle: 0, StartTimeout: 5 * time.Second, StopTimeout: 5 * time.Second, Transfer: transfer},
			Observer: nopObserver{},
			Report: func(r []fleet.Result[NodeReport]) error {
				w.reports <- r
				return nil
			},
		})
	}()
	return w
}

// next waits for the watch's next report, which must have the kubelet
// updated, and returns that result.
func (w *watching) next(t *testing.T, what string) hotswap.Result {
	t.Helper()
	select {
	case r := <-w.reports:
		if err := r[0].Err; err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got := r[0].Value.Results
		if len(got) != 1 || got[0].Action != hotswap.ActionUpdated {
			t.Fatalf("%s: results %+v, want kubelet updated", what, got)
		}
		return got[0]
	case err := <-w.done:
		t.Fatalf("%s: the watch ended: %v", what, err)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no report", what)
	}
	return hotswap.Result{}
}

// stop ends the watch, which must end without an error.
func (w *watching) stop(t *testing.T) {
	t.Helper()
	w.cancel()
	if err := <-w.done; err != nil {
		t.Fatal(err)
	}
}

type nopObserver struct{}

func (nopObserver) Step(string, string) {}
func (nopObserver) Warn(string)         {}
func (nopObserver) Note(string)         {}
func (nopObserver) Download(string, int64) (func(int64), func()) {
	return func(int64) {}, func() {}
}
func (nopObserver) Node(string) NodeObserver { return nopNodeObserver{} }

type nopNodeObserver struct{}

func (nopNodeObserver) Planned(*hotswap.Plan)                {}
func (nopNodeObserver) Step(string)                          {}
func (nopNodeObserver) Upload(hotswap.Item) func(sent int64) { return func(int64) {} }
func (nopNodeObserver) End()                                 {}

// TestConnectWhileHashing: the connection is started while the sources
// are resolved and used by the run (one dial); when a source fails,
// nothing is changed and the connection started ahead is cancelled or
// closed.
func TestConnectWhileHashing(t *testing.T) {
	tests := []struct {
		name    string
		missing bool // the source does not exist
	}{
		{name: "the run uses the connection made while hashing"},
		{name: "a missing source: no connection left open, nothing changed", missing: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithDelays(simnode.Delays{}))
			dir := t.TempDir()
			src := filepath.Join(dir, "kubelet.exe")
			if !tc.missing {
				if err := os.WriteFile(src, []byte("MZ kubelet new\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			before, err := ts.Node().ReadFile(`C:\k\kubelet.exe`)
			if err != nil {
				t.Fatal(err)
			}
			nodes := []v1alpha1.Node{{}}
			nodes[0].Name = "sim"
			nodes[0].Spec.Credentials = ts.Credentials()
			nodes[0].Spec.Kubernetes.Provisioners = []v1alpha1.ProvisionerSpec{{Name: "kubelet", SourceURL: src, Destination: `C:\k\kubelet.exe`}}
			var dials []*closeRecorder
			connect := func(ctx context.Context, spec *v1alpha1.Node, _ func(string)) (*node.Node, error) {
				cfg, err := node.RemoteConfig(spec.Spec.Credentials)
				if err != nil {
					return nil, err
				}
				c, err := remote.Dial(ctx, cfg)
				if err != nil {
					return nil, err
				}
				rec := &closeRecorder{Client: c}
				dials = append(dials, rec)
				return node.New(spec.Name, rec, nil), nil
			}
			err = Run(context.Background(), nodes, connect, Options{
				CacheDir: filepath.Join(dir, "cache"), Resolver: &source.Resolver{CacheDir: filepath.Join(dir, "cache")},
				Swap: hotswap.Options{Settle: 0}, Observer: nopObserver{},
			})
			// A missing source fails fast: the dial started ahead may be
			// cancelled before it connects. Whatever connected is closed.
			if len(dials) > 1 || (!tc.missing && len(dials) != 1) {
				t.Fatalf("%d connections made, want one", len(dials))
			}
			for _, d := range dials {
				if !d.closed {
					t.Error("a connection is still open after Run returned")
				}
			}
			after, rerr := ts.Node().ReadFile(`C:\k\kubelet.exe`)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if tc.missing {
				if err == nil || !strings.Contains(err.Error(), "nothing was changed on any node") {
					t.Errorf("Run: %v, want the source's error", err)
				}
				if string(after) != string(before) {
					t.Error("the node's kubelet.exe changed although the source is missing")
				}
				return
			}
			if err != nil || string(after) != "MZ kubelet new\n" {
				t.Errorf("Run: %v; the node holds %q", err, after)
			}
		})
	}
}

// closeRecorder is a connection that records its Close.
type closeRecorder struct {
	*remote.Client
	closed bool
}

func (c *closeRecorder) Close() error {
	c.closed = true
	return c.Client.Close()
}

// TestWatchWaitsForTheFirstBuild: --watch started before the first build
// (its output folder not made yet) waits for it, and swaps it once built,
// instead of ending with "no such file".
func TestWatchWaitsForTheFirstBuild(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithDelays(simnode.Delays{}))
	dir := t.TempDir()
	src := filepath.Join(dir, "_output", "local", "bin", "windows", "amd64", "kubelet.exe")
	w := startWatch(t, ts, src, dir, nil, hotswap.Transfer{})
	select {
	case err := <-w.done:
		t.Fatalf("the watch ended before the first build: %v", err)
	case r := <-w.reports:
		t.Fatalf("a run before the first build: %+v", r)
	default:
	}
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		t.Fatal(err)
	}
	// As go build does: the whole file, renamed into place (a file
	// written in place may be seen half written by a debounce shorter
	// than the writer's pause).
	if err := os.WriteFile(src+".tmp", []byte("MZ kubelet first build\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(src+".tmp", src); err != nil {
		t.Fatal(err)
	}
	w.next(t, "the first build")
	if got, err := ts.Node().ReadFile(`C:\k\kubelet.exe`); err != nil || string(got) != "MZ kubelet first build\n" {
		t.Errorf("the node's kubelet.exe holds %q (%v)", got, err)
	}
	w.stop(t)
}
