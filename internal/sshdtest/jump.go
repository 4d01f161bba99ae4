package sshdtest

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
)

// JumpServer is an in-process SSH jump host (bastion): it logs in one user
// by public key and serves direct-tcpip channels (what ssh -J and
// ProxyJump open) to the names of its route table only, so that a target
// behind it can be given a name that nothing else resolves. It opens no
// sessions.
type JumpServer struct {
	// Addr is 127.0.0.1:port.
	Addr string
	// HostKey is the server's public host key.
	HostKey ssh.PublicKey

	user   string
	key    ssh.PublicKey
	routes map[string]string

	mu       sync.Mutex
	forwards []string
	logins   int
}

// StartJump starts a JumpServer for the duration of the test. user logs in
// with the private key of authorized; routes maps the host:port a client
// asks for to the address it is forwarded to. Any other destination is
// refused.
func StartJump(t testing.TB, user string, authorized ssh.PublicKey, routes map[string]string) *JumpServer {
	t.Helper()
	signer, l := hostKeyAndListener(t)
	s := &JumpServer{Addr: l.Addr().String(), HostKey: signer.PublicKey(), user: user, key: authorized, routes: routes}
	cfg := &ssh.ServerConfig{
		PublicKeyCallback: func(c ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if c.User() == s.user && bytes.Equal(k.Marshal(), s.key.Marshal()) {
				return nil, nil
			}
			return nil, fmt.Errorf("key not authorized for %q", c.User())
		},
	}
	cfg.AddHostKey(signer)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.serve(c, cfg, &wg)
			}()
		}
	}()
	return s
}

// Forwards lists the destinations (host:port) clients asked to be
// forwarded to, routed or not, in order.
func (s *JumpServer) Forwards() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.forwards...)
}

// Logins is how many clients logged in.
func (s *JumpServer) Logins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins
}

func (s *JumpServer) serve(c net.Conn, cfg *ssh.ServerConfig, wg *sync.WaitGroup) {
	defer c.Close()
	sc, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	defer sc.Close()
	s.mu.Lock()
	s.logins++
	s.mu.Unlock()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "direct-tcpip" {
			_ = nc.Reject(ssh.UnknownChannelType, "a jump host: direct-tcpip only")
			continue
		}
		var req struct {
			Host       string
			Port       uint32
			OriginHost string
			OriginPort uint32
		}
		if err := ssh.Unmarshal(nc.ExtraData(), &req); err != nil {
			_ = nc.Reject(ssh.ConnectionFailed, "bad direct-tcpip request")
			continue
		}
		dest := net.JoinHostPort(req.Host, strconv.Itoa(int(req.Port)))
		s.mu.Lock()
		s.forwards = append(s.forwards, dest)
		s.mu.Unlock()
		to, ok := s.routes[dest]
		if !ok {
			_ = nc.Reject(ssh.ConnectionFailed, "no route to "+dest)
			continue
		}
		up, err := net.Dial("tcp", to)
		if err != nil {
			_ = nc.Reject(ssh.ConnectionFailed, err.Error())
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			up.Close()
			continue
		}
		go ssh.DiscardRequests(creqs)
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(up, ch); up.Close(); done <- struct{}{} }()
			go func() { _, _ = io.Copy(ch, up); ch.Close(); done <- struct{}{} }()
			<-done
			up.Close()
			ch.Close()
			<-done
		}()
	}
}
