package sshdtest

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// GoServer is an in-process SSH server (golang.org/x/crypto/ssh) that
// accepts one user with a password, by the password or the
// keyboard-interactive method. Its sessions answer "exec" by writing the
// command back on stdout and exiting 0; that is enough to prove a login.
// With SFTP set they also serve the SFTP subsystem (pkg/sftp's server,
// on this machine's file system).
type GoServer struct {
	// Addr is 127.0.0.1:port.
	Addr string
	// User and Password are the only accepted credentials.
	User, Password string
	// HostKey is the server's public host key.
	HostKey ssh.PublicKey

	// KeyboardInteractiveOnly turns the password method off, so only
	// keyboard-interactive can log in. Set it before the first connection.
	KeyboardInteractiveOnly atomic.Bool

	// SFTP makes sessions serve the "sftp" subsystem; SFTPOnlyWhenAsked
	// serves it only to a request that asked for an answer, as a server
	// that could not start it and says nothing to a request that did not.
	// Set them before the first connection.
	SFTP, SFTPOnlyWhenAsked atomic.Bool

	mu sync.Mutex
	// subsystemReplies holds the want-reply flag of every subsystem
	// request, in order.
	subsystemReplies []bool
}

// SubsystemReplies returns, in order, whether each subsystem request the
// server got asked for an answer.
func (s *GoServer) SubsystemReplies() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.subsystemReplies...)
}

// StartGoServer starts a GoServer for the duration of the test.
func StartGoServer(t testing.TB, user, password string) *GoServer {
	t.Helper()
	signer, l := hostKeyAndListener(t)
	s := &GoServer{Addr: l.Addr().String(), User: user, Password: password, HostKey: signer.PublicKey()}
	cfg := &ssh.ServerConfig{
		PasswordCallback: func(c ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
			if s.KeyboardInteractiveOnly.Load() {
				return nil, fmt.Errorf("password method disabled")
			}
			if c.User() == s.User && string(pw) == s.Password {
				return nil, nil
			}
			return nil, fmt.Errorf("wrong password for %q", c.User())
		},
		KeyboardInteractiveCallback: func(c ssh.ConnMetadata, ch ssh.KeyboardInteractiveChallenge) (*ssh.Permissions, error) {
			ans, err := ch("", "", []string{"Password: "}, []bool{false})
			if err != nil {
				return nil, err
			}
			if c.User() == s.User && len(ans) == 1 && ans[0] == s.Password {
				return nil, nil
			}
			return nil, fmt.Errorf("wrong password for %q", c.User())
		},
	}
	cfg.AddHostKey(signer)
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(c, cfg)
			}()
		}
	}()
	return s
}

func (s *GoServer) serve(c net.Conn, cfg *ssh.ServerConfig) {
	defer c.Close()
	sc, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		go func() {
			defer ch.Close()
			for r := range creqs {
				if r.Type == "subsystem" {
					if s.subsystem(ch, r) {
						return
					}
					continue
				}
				if r.Type != "exec" {
					_ = r.Reply(false, nil)
					continue
				}
				_ = r.Reply(true, nil)
				var cmd string
				if len(r.Payload) >= 4 {
					n := binary.BigEndian.Uint32(r.Payload)
					if int(n) <= len(r.Payload)-4 {
						cmd = string(r.Payload[4 : 4+n])
					}
				}
				_, _ = io.WriteString(ch, cmd)
				_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
				return
			}
		}()
	}
}

// subsystem answers a subsystem request on ch, recording whether it asked
// for an answer, and reports whether it served SFTP on ch (to its end).
func (s *GoServer) subsystem(ch ssh.Channel, r *ssh.Request) bool {
	s.mu.Lock()
	s.subsystemReplies = append(s.subsystemReplies, r.WantReply)
	s.mu.Unlock()
	var name struct{ Name string }
	serve := ssh.Unmarshal(r.Payload, &name) == nil && name.Name == "sftp" && s.SFTP.Load() &&
		(r.WantReply || !s.SFTPOnlyWhenAsked.Load())
	_ = r.Reply(serve, nil)
	if !serve {
		return false
	}
	srv, err := sftp.NewServer(ch)
	if err != nil {
		return true
	}
	_ = srv.Serve()
	_ = srv.Close()
	return true
}

// Silent starts a TCP listener that accepts connections and never says a
// word, as a firewall that swallows packets or a hung sshd would. It
// returns its address.
func Silent(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return l.Addr().String()
}

// ClosedPort returns a loopback address nothing listens on.
func ClosedPort(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", freePort(t))
}

// Proxy is a loopback TCP proxy in front of a server. Its first Cuts
// connections are cut (both directions closed) once CutAfter bytes went
// from client to server; later connections pass untouched.
type Proxy struct {
	// Addr is the proxy's 127.0.0.1:port.
	Addr string

	target   string
	cutAfter int64
	cuts     atomic.Int64
	conns    atomic.Int64

	mu   sync.Mutex
	live map[*proxyConn]struct{}
}

type proxyConn struct {
	c, u   net.Conn
	frozen atomic.Bool // both directions
	mute   atomic.Bool // client to server only
}

// StartProxy forwards to target and cuts the first cuts connections after
// cutAfter client-to-server bytes. cuts < 0 cuts every connection.
func StartProxy(t testing.TB, target string, cutAfter int64, cuts int) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: l.Addr().String(), target: target, cutAfter: cutAfter, live: map[*proxyConn]struct{}{}}
	p.cuts.Store(int64(cuts))
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); p.CutAll(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.conns.Add(1)
			cut := false
			if n := p.cuts.Load(); n < 0 {
				cut = true
			} else if n > 0 {
				cut = p.cuts.Add(-1) >= 0
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.serve(c, cut)
			}()
		}
	}()
	return p
}

// Connections is how many client connections the proxy accepted.
func (p *Proxy) Connections() int { return int(p.conns.Load()) }

// CutAll closes every connection open now, as a dropped link would.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.live {
		pc.c.Close()
		pc.u.Close()
	}
}

// FreezeAll stops forwarding on every connection open now without closing
// it, as a link that silently stopped carrying packets. New connections
// are not affected.
func (p *Proxy) FreezeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.live {
		pc.frozen.Store(true)
	}
}

// MuteAll stops forwarding what clients send on every connection open now,
// while what servers send still arrives: a link that lost one direction.
func (p *Proxy) MuteAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pc := range p.live {
		pc.mute.Store(true)
	}
}

func (p *Proxy) serve(c net.Conn, cut bool) {
	defer c.Close()
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer u.Close()
	pc := &proxyConn{c: c, u: u}
	p.mu.Lock()
	p.live[pc] = struct{}{}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.live, pc)
		p.mu.Unlock()
	}()
	done := make(chan struct{}, 2)
	go func() {
		var r io.Reader = c
		if cut {
			r = io.LimitReader(c, p.cutAfter)
		}
		_, _ = pipe(u, r, pc, func() bool { return pc.frozen.Load() || pc.mute.Load() })
		// Cut: close both sides at once, as a dropped link would.
		c.Close()
		u.Close()
		done <- struct{}{}
	}()
	go func() {
		_, _ = pipe(c, u, pc, pc.frozen.Load)
		c.Close()
		u.Close()
		done <- struct{}{}
	}()
	<-done
	<-done
}

// pipe copies like io.Copy but stops delivering (and holds the data) while
// held says so.
func pipe(dst io.Writer, src io.Reader, pc *proxyConn, held func() bool) (int64, error) {
	buf := make([]byte, 32*1024)
	var total int64
	for {
		n, err := src.Read(buf)
		for n > 0 && held() {
			time.Sleep(10 * time.Millisecond)
			if isClosed(pc) {
				return total, net.ErrClosed
			}
		}
		if n > 0 {
			w, werr := dst.Write(buf[:n])
			total += int64(w)
			if werr != nil {
				return total, werr
			}
		}
		if err != nil {
			return total, err
		}
	}
}

// isClosed reports whether the proxy side of pc was closed (by cleanup).
func isClosed(pc *proxyConn) bool {
	return pc.c.SetDeadline(time.Time{}) != nil
}

// hostKeyAndListener makes a throwaway ed25519 host key and a listener on
// a free loopback port, for a test's in-process SSH server.
func hostKeyAndListener(t testing.TB) (ssh.Signer, net.Listener) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return signer, l
}
