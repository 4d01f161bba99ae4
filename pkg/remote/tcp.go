package remote

import (
	"context"
	"errors"
	"fmt"
	"net"

	"golang.org/x/crypto/ssh"
)

// DialTCP opens a TCP stream to addr (host:port) as the node sees it,
// through the SSH connection (direct-tcpip, what `ssh -L` uses): 127.0.0.1
// is the node itself. The server must allow TCP forwarding (OpenSSH's
// AllowTcpForwarding, yes by default). Closing the returned conn closes
// only the stream. A connection found dead is replaced, once: a stream
// that could not be opened reached nothing.
func (c *Client) DialTCP(ctx context.Context, addr string) (net.Conn, error) {
	var s net.Conn
	err := withRetry(ctx, "open "+addr+" on "+c.t.addr, sessionRetry, func(ctx context.Context, attempt int) error {
		cn, err := c.conn(ctx)
		if err != nil {
			return err
		}
		s, err = cn.ssh.DialContext(ctx, "tcp", addr)
		var refused *ssh.OpenChannelError
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &refused) && cn.lost(err):
			return fmt.Errorf("open %s on %s through ssh: %w: %w", addr, c.t.addr, ErrConnectionLost, err)
		}
		return fmt.Errorf("open %s on %s through ssh: %w (nothing listens there, or sshd does not allow AllowTcpForwarding)", addr, c.t.addr, err)
	})
	return s, err
}

// Dropped returns a channel that is closed when the current connection
// ends (at once when there is none): after a reboot was asked for, it
// says that the node went down.
func (c *Client) Dropped() <-chan struct{} {
	cn, _ := c.live()
	if cn == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	return cn.done
}
