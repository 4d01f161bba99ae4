package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"

	"sigs.k8s.io/swdt/pkg/remote"
)

// The transport verbs (swdt cp, port-forward, ssh, reboot) use the
// connection itself, not an op of the agent. A transport that cannot do
// one of them (Capabilities) makes it an error that says so. Workflows
// see the transport only through this file: its types and errors are
// named here, so that no workflow imports pkg/remote (DESIGN.md §3.1).

// ShellOptions say what Shell runs and where its terminal's bytes go.
type ShellOptions = remote.ShellOptions

// WindowSize is a terminal's size in characters.
type WindowSize = remote.WindowSize

// ErrConnectionLost is what an op matches when the node's connection
// dropped during it (the op may or may not have completed). A transport
// other than SSH wraps it for the same event.
var ErrConnectionLost = remote.ErrConnectionLost

// ErrUnreachable is what a transport other than SSH wraps when the node
// does not answer (yet): Unreachable reports it, as it does SSH's
// *remote.DialError.
var ErrUnreachable = errors.New("the node does not answer")

// Unreachable reports whether err is a failure to reach the node, worth
// waiting for (a node coming up), as opposed to a refusal that will not
// go away (a rejected key, a changed host key).
func Unreachable(err error) bool {
	var de *remote.DialError
	return errors.As(err, &de) || errors.Is(err, ErrUnreachable)
}

// ConnectionLost reports whether err is the node's connection failing,
// not the op: dropped during a call, or the node not reached.
func ConnectionLost(err error) bool {
	return errors.Is(err, ErrConnectionLost) || Unreachable(err)
}

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
		return nil, n.unsupported("forward ports", "swdt port-forward")
	}
	return n.extras.forward.DialTCP(ctx, addr)
}

// DialUnix opens a stream to a unix socket of the machine (a libvirtd
// host reached over SSH), through the node's connection.
func (n *Node) DialUnix(ctx context.Context, socketPath string) (net.Conn, error) {
	if n.extras.unix == nil {
		return nil, n.unsupported("open unix sockets", "a qemu+ssh libvirt URI")
	}
	return n.extras.unix.DialUnix(ctx, socketPath)
}

// Shell runs an interactive session with a terminal on the node and
// returns its exit status.
func (n *Node) Shell(ctx context.Context, opts ShellOptions) (int, error) {
	if n.extras.term == nil {
		return -1, n.unsupported("open a terminal", "swdt ssh")
	}
	return n.extras.term.Shell(ctx, opts)
}

// Dropped is closed when the node's current connection ends: after a
// reboot was asked for, the node went down.
func (n *Node) Dropped() (<-chan struct{}, error) {
	if n.extras.redial == nil {
		return nil, n.unsupported("tell when the node goes down", "swdt reboot --wait")
	}
	return n.extras.redial.Dropped(), nil
}

// Reconnect drops the node's connection and dials a new one.
func (n *Node) Reconnect(ctx context.Context) error {
	if n.extras.redial == nil {
		return n.unsupported("reconnect", "swdt reboot --wait")
	}
	return n.extras.redial.Reconnect(ctx)
}

// unsupported is the error of a verb the node's transport cannot serve:
// most need SSH itself (Capabilities.SSH).
func (n *Node) unsupported(what, verb string) error {
	if n.extras.ssh {
		return fmt.Errorf("the connection to node %s cannot %s (%T)", n.Name, what, n.conn)
	}
	return fmt.Errorf("the connection to node %s cannot %s (%T): %s needs an SSH connection to the node (spec.credentials in the node file)", n.Name, what, n.conn, verb)
}
