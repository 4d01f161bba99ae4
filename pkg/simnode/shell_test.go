package simnode

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// readUntil reads r until it has seen want and returns what it read.
func readUntil(t *testing.T, r *bufio.Reader, want string) string {
	t.Helper()
	var b strings.Builder
	for !strings.Contains(b.String(), want) {
		c, err := r.ReadByte()
		if err != nil {
			t.Fatalf("output ended (%v) before %q:\n%q", err, want, b.String())
		}
		b.WriteByte(c)
	}
	return b.String()
}

// The login shell with a PTY: echo, the terminal's size and its changes
// (mode con), built-ins and the exit status.
func TestShellPTY(t *testing.T) {
	ts := StartTest(t)
	c, err := ts.Dial(ts.User())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := sess.RequestPty("xterm", 24, 80, ssh.TerminalModes{}); err != nil {
		t.Fatal(err)
	}
	in, _ := sess.StdinPipe()
	out, _ := sess.StdoutPipe()
	if err := sess.Shell(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	readUntil(t, r, `C:\Users\Administrator>`)
	io.WriteString(in, "mode con\r")
	if got := readUntil(t, r, `C:\Users\Administrator>`); !strings.Contains(got, "mode con\r\n") || !strings.Contains(got, "Lines:          24") || !strings.Contains(got, "Columns:        80") {
		t.Errorf("mode con before the change:\n%q", got)
	}
	if err := sess.WindowChange(50, 132); err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, "mode\r")
	if got := readUntil(t, r, `C:\Users\Administrator>`); !strings.Contains(got, "Lines:          50") || !strings.Contains(got, "Columns:        132") {
		t.Errorf("mode con after the change:\n%q", got)
	}
	io.WriteString(in, "cd C:\\k\rab\x7fc\x03whoami\rexit /b 4\r")
	got := readUntil(t, r, `C:\k>exit /b 4`)
	for _, want := range []string{"ab\b \bc^C\r\n", `C:\k>whoami` + "\r\nwin-simnode01\\administrator\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%q", want, got)
		}
	}
	var ee *ssh.ExitError
	if err := sess.Wait(); err == nil || !errors.As(err, &ee) || ee.ExitStatus() != 4 {
		t.Errorf("exit: %v, want status 4", err)
	}
}

// direct-tcpip reaches only the loopback.
func TestDirectTCPIPLoopbackOnly(t *testing.T) {
	ts := StartTest(t)
	c, err := ts.Dial(ts.User())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Dial("tcp", "192.0.2.1:80")
	var oe *ssh.OpenChannelError
	if err == nil || !errors.As(err, &oe) || oe.Reason != ssh.Prohibited {
		t.Errorf("a stream to another host: %v, want administratively prohibited", err)
	}
}

// A service whose dependency is still starting waits for it, as the
// service control manager does, also when the machine is next looked at
// after all of them were due (kube-proxy sorts before kubelet).
func TestStartWaitsForStartingDependency(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	stopAll(t, n)
	if err := n.StartService("kube-proxy"); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	n.m.mu.Lock()
	n.m.now = func() time.Time { return later }
	n.m.mu.Unlock()
	for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
		if svc, _ := n.Service(name); svc.Status != StatusRunning {
			t.Errorf("%s is %s (exit code %d), want Running", name, svc.Status, svc.LastExitCode)
		}
	}
}
