package simnode

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/pkg/winos"
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
// (mode con), built-ins and the exit status. The session is a raw
// channel so that the window change can ask for a reply: the reply comes
// once the shell has the new size.
func TestShellPTY(t *testing.T) {
	ts := StartTest(t)
	c, err := ts.Dial(ts.User())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ch, reqs, err := c.OpenChannel("session", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	status := make(chan uint32, 1)
	go func() {
		for r := range reqs {
			if r.Type == "exit-status" {
				var s struct{ Status uint32 }
				_ = ssh.Unmarshal(r.Payload, &s)
				status <- s.Status
			}
		}
	}()
	request := func(name string, payload any) {
		t.Helper()
		if ok, err := ch.SendRequest(name, true, ssh.Marshal(payload)); !ok || err != nil {
			t.Fatalf("%s: %v, %v", name, ok, err)
		}
	}
	request("pty-req", struct {
		Term                  string
		Columns, Rows, PW, PH uint32
		Modes                 string
	}{"xterm", 80, 24, 0, 0, ""})
	if ok, err := ch.SendRequest("shell", true, nil); !ok || err != nil {
		t.Fatalf("shell: %v, %v", ok, err)
	}
	r := bufio.NewReader(ch)
	readUntil(t, r, `C:\Users\Administrator>`)
	io.WriteString(ch, "mode con\r")
	if got := readUntil(t, r, `C:\Users\Administrator>`); !strings.Contains(got, "mode con\r\n") || !strings.Contains(got, "Lines:          24") || !strings.Contains(got, "Columns:        80") {
		t.Errorf("mode con before the change:\n%q", got)
	}
	request("window-change", struct{ Columns, Rows, PW, PH uint32 }{132, 50, 0, 0})
	io.WriteString(ch, "mode\r")
	if got := readUntil(t, r, `C:\Users\Administrator>`); !strings.Contains(got, "Lines:          50") || !strings.Contains(got, "Columns:        132") {
		t.Errorf("mode con after the change:\n%q", got)
	}
	io.WriteString(ch, "cd C:\\k\rab\x7fc\x03whoami\rexit /b 4\r")
	got := readUntil(t, r, `C:\k>exit /b 4`)
	for _, want := range []string{"ab\b \bc^C\r\n", `C:\k>whoami` + "\r\nwin-simnode01\\administrator\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%q", want, got)
		}
	}
	if s := <-status; s != 4 {
		t.Errorf("exit status %d, want 4", s)
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
	n.SetClock(func() time.Time { return later })
	for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
		if svc, _ := n.Service(name); svc.Status != StatusRunning {
			t.Errorf("%s is %s (exit code %d), want Running", name, svc.Status, svc.LastExitCode)
		}
	}
}

// shutdown.exe /r: connections drop, the machine comes back, Automatic
// services start with new processes, a pending .NET install completes.
func TestRebootThroughShutdown(t *testing.T) {
	ts := StartTest(t, WithDelays(Delays{ServiceStart: 10 * time.Millisecond, ServiceStop: 10 * time.Millisecond, ShutdownGrace: 10 * time.Millisecond, Boot: 100 * time.Millisecond}))
	n := ts.Node()
	if err := n.Update(func(s *State) error { s.Chocolatey.NetFxPending = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := n.ConfigureService("kube-proxy", func(cfg *ServiceConfig) { cfg.StartType = StartManual }); err != nil {
		t.Fatal(err)
	}
	before := ts.State()
	c, err := ts.Dial(ts.User())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := n.OS().Run(t.Context(), winos.Command{Path: "shutdown.exe", Args: []string{"/r", "/t", "0"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("shutdown.exe: %+v, %v", res, err)
	}
	if err := c.Wait(); err == nil {
		t.Errorf("the connection ended without an error")
	}
	waitStatus(t, n, "kubelet", StatusRunning)
	after := ts.State()
	if len(after.Boots) != 1 || after.Chocolatey.NetFxPending {
		t.Errorf("boots %v, .NET pending %v", after.Boots, after.Chocolatey.NetFxPending)
	}
	for _, name := range []string{"containerd", "kubelet"} {
		if after.Services[name].PID == before.Services[name].PID {
			t.Errorf("%s kept its process %d", name, before.Services[name].PID)
		}
	}
	if s := after.Services["kube-proxy"]; s.Status != StatusStopped || s.PID != 0 {
		t.Errorf("kube-proxy (Manual) after the reboot: %s, PID %d", s.Status, s.PID)
	}
	if c2, err := ts.Dial(ts.User()); err != nil {
		t.Errorf("SSH after the boot: %v", err)
	} else {
		c2.Close()
	}
}
