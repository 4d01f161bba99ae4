package node

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"

	"sigs.k8s.io/swdt/pkg/remote"
)

// The transport verbs (swdt cp, port-forward, ssh, reboot) use the
// connection itself, not an op of the agent. A transport that cannot do
// one of them (Capabilities) makes it an error that says so.

// Stat describes a file or directory on the node; a missing one matches
// fs.ErrNotExist.
func (n *Node) Stat(ctx context.Context, remotePath string) (fs.FileInfo, error) {
	return n.conn.Stat(ctx, remotePath)
}

// ReadDir lists a directory on the node.
func (n *Node) ReadDir(ctx context.Context, remotePath string) ([]fs.FileInfo, error) {
	return n.conn.ReadDir(ctx, remotePath)
}

// Download copies a file of the node to w, each byte once.
func (n *Node) Download(ctx context.Context, remotePath string, w io.Writer) error {
	return n.conn.Download(ctx, remotePath, w)
}

// DialTCP opens a TCP stream to addr as the node sees it (127.0.0.1 is
// the node), through the node's connection.
func (n *Node) DialTCP(ctx context.Context, addr string) (net.Conn, error) {
	if n.extras.forward == nil {
		return nil, n.unsupported("forward ports")
	}
	return n.extras.forward.DialTCP(ctx, addr)
}

// Shell runs an interactive session with a terminal on the node and
// returns its exit status.
func (n *Node) Shell(ctx context.Context, opts remote.ShellOptions) (int, error) {
	if n.extras.term == nil {
		return -1, n.unsupported("open a terminal")
	}
	return n.extras.term.Shell(ctx, opts)
}

// Dropped is closed when the node's current connection ends: after a
// reboot was asked for, the node went down.
func (n *Node) Dropped() (<-chan struct{}, error) {
	if n.extras.redial == nil {
		return nil, n.unsupported("tell when the node goes down")
	}
	return n.extras.redial.Dropped(), nil
}

// Reconnect drops the node's connection and dials a new one.
func (n *Node) Reconnect(ctx context.Context) error {
	if n.extras.redial == nil {
		return n.unsupported("reconnect")
	}
	return n.extras.redial.Reconnect(ctx)
}

func (n *Node) unsupported(what string) error {
	return fmt.Errorf("the connection to node %s cannot %s (%T)", n.Name, what, n.conn)
}
