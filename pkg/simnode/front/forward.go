package front

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	"golang.org/x/crypto/ssh"
)

// direct-tcpip channels: what `ssh -L` and swdt port-forward open. The
// simulated node has no network of its own, so a stream to the node's
// loopback (127.0.0.1, ::1, localhost) reaches the same port on the
// loopback of the machine simnode runs on, where a test listens. Any other
// host is refused (administratively prohibited, as sshd with
// PermitOpen does), so simnode never connects anywhere else.

// directTCPIP is the payload of a direct-tcpip channel open (RFC 4254
// 7.2).
type directTCPIP struct {
	Host       string
	Port       uint32
	OriginHost string
	OriginPort uint32
}

// serveDirectTCPIP accepts or refuses one direct-tcpip channel and pipes
// it to the loopback port it names until either side closes.
func (cs *connState) serveDirectTCPIP(nc ssh.NewChannel) {
	var p directTCPIP
	if err := ssh.Unmarshal(nc.ExtraData(), &p); err != nil {
		_ = nc.Reject(ssh.ConnectionFailed, "bad direct-tcpip request")
		return
	}
	if !isLoopbackName(p.Host) {
		_ = nc.Reject(ssh.Prohibited, fmt.Sprintf("simnode forwards only to its own loopback, not %s", p.Host))
		return
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(p.Port)))
	var d net.Dialer
	target, err := d.DialContext(cs.ctx, "tcp", addr)
	if err != nil {
		_ = nc.Reject(ssh.ConnectionFailed, fmt.Sprintf("connect to %s: %v", addr, err))
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		target.Close()
		return
	}
	go ssh.DiscardRequests(reqs)
	cs.srv.log.Debug("direct-tcpip", "to", addr, "user", cs.account.Name)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(target, ch)
		if tc, ok := target.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	go func() {
		defer wg.Done()
		_, _ = io.Copy(ch, target)
		_ = ch.CloseWrite()
	}()
	stop := make(chan struct{})
	go func() {
		// The connection's end ends the stream.
		select {
		case <-cs.ctx.Done():
			target.Close()
			ch.Close()
		case <-stop:
		}
	}()
	wg.Wait()
	close(stop)
	target.Close()
	ch.Close()
}

func isLoopbackName(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
