package remote

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/internal/sshdtest"
)

// Against OpenSSH: the PTY has the size asked for, a window change
// reaches it, typed input reaches the command and its exit status comes
// back.
func TestShellPTY(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, sshdConfig(t, s))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	resize := make(chan WindowSize)
	done := make(chan error, 1)
	var status int
	go func() {
		var err error
		status, err = c.Shell(t.Context(), ShellOptions{
			Command: "stty size; read x; stty size; exit 3",
			Size:    WindowSize{Width: 100, Height: 30},
			Resize:  resize, Stdin: inR, Stdout: outW,
		})
		outW.Close()
		done <- err
	}()
	lines := bufio.NewScanner(outR)
	next := func() string {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("output ended: %v", lines.Err())
		}
		return strings.TrimSpace(lines.Text())
	}
	if got := next(); got != "30 100" {
		t.Fatalf("first size %q, want 30 100", got)
	}
	// Shell takes the second change only once it has sent the first:
	// the window change then precedes the line that ends the read.
	resize <- WindowSize{Width: 132, Height: 50}
	resize <- WindowSize{Width: 132, Height: 50}
	if _, err := io.WriteString(inW, "go\r"); err != nil {
		t.Fatal(err)
	}
	for got := next(); got != "50 132"; got = next() {
		if got != "go" { // the terminal's echo
			t.Fatalf("after the change: %q, want 50 132", got)
		}
	}
	go io.Copy(io.Discard, outR)
	if err := <-done; err != nil || status != 3 {
		t.Errorf("status %d, err %v; want 3, nil", status, err)
	}
	inW.Close()
}

// DialTCP reaches a port on the server's loopback.
func TestDialTCP(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, sshdConfig(t, s))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		conn, err := l.Accept()
		if err == nil {
			io.WriteString(conn, "hello from the node\n")
			conn.Close()
		}
	}()
	conn, err := c.DialTCP(t.Context(), l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got, err := io.ReadAll(conn)
	if err != nil || string(got) != "hello from the node\n" {
		t.Errorf("read %q, %v", got, err)
	}
	l.Close()
	if _, err := c.DialTCP(t.Context(), l.Addr().String()); err == nil || !strings.Contains(err.Error(), "nothing listens there") {
		t.Errorf("a closed port: %v", err)
	}
}

// endless is a stdin that never ends: what a user may type (or paste)
// while the command is already done.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'y'
	}
	return len(p), nil
}

// A command that exits 0 while its stdin still has bytes for it (with a
// terminal, swdt ssh -- CMD; without, swdt exec and the agent): the
// stdin copy then writes to a channel the server closed, and gets EOF.
// That is no failure of the command (OpenSSH's ssh -tt says 0, swdt said
// "EOF" in some runs); its status comes back, every time.
func TestShellStdinAfterExit(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, sshdConfig(t, s))
	for i := range 5 {
		status, err := c.Shell(t.Context(), ShellOptions{Command: "exit 0", Stdin: endless{}, Stdout: io.Discard})
		if err != nil || status != 0 {
			t.Fatalf("run %d: status %d, err %v; want 0, nil", i, status, err)
		}
		// The same without a terminal (swdt exec, the agent's ops).
		status, err = c.Exec(t.Context(), "exit 0", endless{}, io.Discard, io.Discard)
		if err != nil || status != 0 {
			t.Fatalf("exec %d: status %d, err %v; want 0, nil", i, status, err)
		}
	}
}
