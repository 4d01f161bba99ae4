package sshdtest

import (
	"bytes"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

func login(t *testing.T, addr, user, keyFile string, hostKey ssh.PublicKey) *ssh.Client {
	t.Helper()
	pem, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(hostKey),
		Timeout:         5 * time.Second,
	})
	if err != nil {
		t.Fatalf("login: %v", err)
	}
	return c
}

func TestStartExecAndNewHostKey(t *testing.T) {
	s := Start(t)
	c := login(t, s.Addr, s.User, s.KeyFile, s.HostKeys[0])
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, err := sess.Output("echo hello")
	if err != nil || strings.TrimSpace(string(out)) != "hello" {
		t.Fatalf("echo: %q, %v", out, err)
	}
	c.Close()

	old := s.Fingerprint()
	s.RestartWithNewHostKey()
	if s.Fingerprint() == old {
		t.Fatal("host key did not change")
	}
	c = login(t, s.Addr, s.User, s.KeyFile, s.HostKeys[0])
	c.Close()
	if !strings.Contains(s.KnownHostsLine(), "[127.0.0.1]:") {
		t.Errorf("known hosts line %q lacks the normalized address", s.KnownHostsLine())
	}
}

func TestProxyCutsAfterN(t *testing.T) {
	// An echo server behind the proxy.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					c.Write(buf[:n])
				}
			}()
		}
	}()
	p := StartProxy(t, l.Addr().String(), 10, 1)
	read := func() []byte {
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(bytes.Repeat([]byte("x"), 100))
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		var got []byte
		buf := make([]byte, 200)
		for len(got) < 100 {
			n, err := c.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				break
			}
		}
		return got
	}
	if got := read(); len(got) > 10 {
		t.Errorf("first connection passed %d bytes, want <= 10", len(got))
	}
	if got := read(); len(got) != 100 {
		t.Errorf("second connection passed %d bytes, want 100", len(got))
	}
}

func TestSilentNeverSpeaks(t *testing.T) {
	addr := Silent(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("silent listener spoke: %d, %v", n, err)
	}
}
