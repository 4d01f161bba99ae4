package node

import (
	"context"
	"io"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
)

// UploadStream sends a stream made while it is sent (a compressed file, a
// patch) to remotePath and returns its length. It writes remotePath
// itself, with no staged name: the swap op decodes and verifies it.
func (n *Node) UploadStream(ctx context.Context, open func() (io.ReadCloser, error), remotePath string, progress func(sent int64)) (int64, error) {
	return n.conn.UploadStream(ctx, open, remotePath, progress)
}

// PrepareUploads starts what uploads need (the SFTP subsystem) ahead of
// them, so that it can run alongside an op; uploads wait for it. A
// transport without such a step has nothing to do.
func (n *Node) PrepareUploads(ctx context.Context) error {
	if p, ok := n.conn.(interface {
		StartSFTP(ctx context.Context) error
	}); ok {
		return p.StartSFTP(ctx)
	}
	return nil
}

// PrepareAgent checks (or delivers) the agent, as the first op would:
// a caller starts it while it gets that op ready. An error shows again
// in the op.
func (n *Node) PrepareAgent(ctx context.Context) error {
	if n.agent() != "" {
		return nil
	}
	_, _, err := n.deliver(ctx, time.Now())
	return err
}

// PrepareSession opens the channel of the node's next op in the
// background (remote.Client.OpenSessionAhead), when the transport can.
func (n *Node) PrepareSession() {
	if p, ok := n.conn.(interface{ OpenSessionAhead() }); ok {
		p.OpenSessionAhead()
	}
}

// PrepareOp starts op name ahead on the transport
// (remote.Client.StartAhead) with the agent PrepareAgent verified, when
// there is one and the transport can: the op's run that follows soon
// then only sends its request. The agent reads its whole request before
// it does anything, so an op started and never sent does nothing.
func (n *Node) PrepareOp(name string) {
	path := n.agent()
	if path == "" {
		return
	}
	if p, ok := n.conn.(interface{ StartAhead(cmd string) }); ok {
		p.StartAhead(ops.CommandLine(path, name))
	}
}

// WaitLinkRTT is LinkRTT once the transport's measure has its answer,
// waiting for it until ctx is done.
func (n *Node) WaitLinkRTT(ctx context.Context) (time.Duration, bool) {
	if m, ok := n.conn.(interface {
		WaitRTT(ctx context.Context) (time.Duration, bool)
	}); ok {
		return m.WaitRTT(ctx)
	}
	return n.LinkRTT()
}

// LinkRTT is the connection's measured round-trip time, when the
// transport measures it and has an answer (ok false otherwise).
func (n *Node) LinkRTT() (time.Duration, bool) {
	if m, ok := n.conn.(interface{ RTT() (time.Duration, bool) }); ok {
		return m.RTT()
	}
	return 0, false
}
