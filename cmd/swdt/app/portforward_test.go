package app

import (
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/echotest"
	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
	"sigs.k8s.io/swdt/pkg/winos"
)

// forwardedPorts starts swdt port-forward -o json with args and returns
// its forwards once they listen, and a function that stops it (Ctrl-C)
// and returns its exit code and stderr.
func forwardedPorts(t *testing.T, args ...string) (report.PortForward, func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, append([]string{"port-forward", "-o", "json"}, args...))
	}()
	stop := func() (int, string) {
		cancel()
		return <-done, errOut.String()
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "\n") {
		select {
		case code := <-done:
			t.Fatalf("port-forward ended with exit %d before listening\n%s", code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("port-forward never listened\n%s", errOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var doc report.PortForward
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		stop()
		t.Fatalf("bad JSON (%v): %s", err, out.String())
	}
	return doc, stop
}

func freeLocalPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// portForwardTwoPorts forwards two ports (one to a fixed local port, one
// to a free one) and a third to a port nothing listens on, to the node
// args name (node is its name), and checks that each stream reaches its
// own service and the refused one is a warning that stops nothing.
func portForwardTwoPorts(t *testing.T, node string, args ...string) {
	a, b := echotest.Server(t, "a:"), echotest.Server(t, "b:")
	dead := freeLocalPort(t)
	fixed := freeLocalPort(t)
	doc, stop := forwardedPorts(t, append(args, strconv.Itoa(fixed)+":"+strconv.Itoa(a), ":"+strconv.Itoa(b), ":"+strconv.Itoa(dead))...)
	if doc.Kind != report.KindPortForward || doc.Result != report.Listening || doc.Node != node || len(doc.Forwards) != 3 {
		stop()
		t.Fatalf("document = %+v", doc)
	}
	if want := "127.0.0.1:" + strconv.Itoa(fixed); doc.Forwards[0].Local != want || doc.Forwards[0].Remote != "127.0.0.1:"+strconv.Itoa(a) {
		t.Errorf("first forward = %+v, want %s -> %d", doc.Forwards[0], want, a)
	}
	for i := 0; i < 3; i++ { // several streams, one after another and at once
		if got := echotest.Ask(t, doc.Forwards[0].Local, "hello"); got != "a:hello\n" {
			t.Errorf("through the first port: %q", got)
		}
		if got := echotest.Ask(t, doc.Forwards[1].Local, "hi"); got != "b:hi\n" {
			t.Errorf("through the second port: %q", got)
		}
	}
	c, err := net.Dial("tcp", doc.Forwards[2].Local)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Errorf("a stream to a port nothing listens on stayed open")
	}
	c.Close()
	if got := echotest.Ask(t, doc.Forwards[1].Local, "still"); got != "b:still\n" {
		t.Errorf("after a refused stream: %q", got)
	}
	code, errOut := stop()
	if code != exitcode.OK {
		t.Errorf("Ctrl-C ended port-forward with exit %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "-> 127.0.0.1:"+strconv.Itoa(dead)) {
		t.Errorf("no warning about the refused stream:\n%s", errOut)
	}
	if _, err := net.Dial("tcp", doc.Forwards[0].Local); err == nil {
		t.Errorf("%s still listens after Ctrl-C", doc.Forwards[0].Local)
	}
}

func TestPortForwardSimnode(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := writeNodeFile(t, t.TempDir(), nodeHeader("node1", ts.Credentials()))
	portForwardTwoPorts(t, "node1", "-c", file, "node1")
}

func TestPortForwardOpenSSH(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	file := writeNodeFile(t, t.TempDir(), nodeHeader("node1", sshdCredentials(t, s)))
	portForwardTwoPorts(t, "node1", "-c", file, "node1")
}

func TestPortForwardUsage(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := writeNodeFile(t, t.TempDir(), nodeHeader("node1", ts.Credentials())+"---\n"+nodeHeader("node2", ts.Credentials()))
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := strconv.Itoa(taken.Addr().(*net.TCPAddr).Port)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"node1"}, "name at least one port"},
		{[]string{"node1", "http"}, `port "http": "http" is not a port number`},
		{[]string{"node1", "1:70000"}, `"70000" is not a port number`},
		{[]string{"10250"}, "swdt port-forward needs a node"},
		{[]string{"--node", "node1,node2", "10250"}, "works on one node"},
		{[]string{"node1", port + ":80"}, "listen on 127.0.0.1 port " + port},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := run(t, append([]string{"port-forward", "-c", file}, tt.args...)...)
			if code != exitcode.Usage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %s\nwant exit %d and %q", code, errOut, exitcode.Usage, tt.want)
			}
		})
	}
}

// A forward outlives its SSH connection: after the node rebooted (every
// connection dropped), the next stream dials a new one.
func TestPortForwardAfterTheConnectionDropped(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithDelays(simnode.Delays{ServiceStart: 10 * time.Millisecond, ServiceStop: 10 * time.Millisecond,
		ShutdownGrace: 10 * time.Millisecond, Boot: 200 * time.Millisecond}))
	file := writeNodeFile(t, t.TempDir(), nodeHeader("node1", ts.Credentials()))
	doc, stop := forwardedPorts(t, "-c", file, ":"+strconv.Itoa(echotest.Server(t, "")))
	if got := echotest.Ask(t, doc.Forwards[0].Local, "before"); got != "before\n" {
		t.Fatalf("before the drop: %q", got)
	}
	if res, err := ts.Node().OS().Run(t.Context(), winos.Command{Path: "shutdown.exe", Args: []string{"/r", "/t", "0"}}); err != nil || res.ExitCode != 0 {
		t.Fatalf("shutdown.exe: %+v, %v", res, err)
	}
	if !waitFor(t, func() bool { b := ts.Node().Boots(); return len(b) == 1 && time.Now().After(b[0]) }) {
		t.Fatal("the node never came back")
	}
	if got := echotest.Ask(t, doc.Forwards[0].Local, "after"); got != "after\n" {
		t.Errorf("after the drop: %q", got)
	}
	if code, errOut := stop(); code != exitcode.OK {
		t.Errorf("exit %d\n%s", code, errOut)
	}
}
