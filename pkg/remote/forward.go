package remote

import (
	"context"
	"fmt"
	"net"
)

// DialUnix opens a stream to a unix socket on the remote host through the
// SSH connection (direct-streamlocal@openssh.com, what `ssh -L
// local:/remote.sock` uses), for example libvirtd's socket on a KVM host.
// The server must allow stream local forwarding (OpenSSH's default).
// Closing the returned conn closes only the stream.
func (c *Client) DialUnix(ctx context.Context, socketPath string) (net.Conn, error) {
	cn, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	s, err := cn.ssh.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("open %s on %s through ssh: %w (sshd must allow AllowStreamLocalForwarding)", socketPath, c.t.addr, err)
	}
	return s, nil
}
