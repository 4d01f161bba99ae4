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
	if n.extras.uploads == nil {
		return nil
	}
	return n.extras.uploads.StartSFTP(ctx)
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
	if n.extras.ahead != nil {
		n.extras.ahead.OpenSessionAhead()
	}
}

// PrepareOp starts op name ahead on the transport
// (remote.Client.StartAhead) with the agent PrepareAgent verified, when
// there is one and the transport can: the op's run that follows soon
// then only sends its request. The agent reads its whole request before
// it does anything, so an op started and never sent does nothing. While
// an op of that name runs, it starts none: that run was the one it was
// for (it went before the agent's check had returned to the caller), and
// one started now would only start a program on the node that waits for
// nothing.
func (n *Node) PrepareOp(name string) {
	path := n.agent()
	if path == "" || n.extras.ahead == nil {
		return
	}
	n.opsMu.Lock()
	defer n.opsMu.Unlock()
	if n.running[name] == 0 {
		n.extras.ahead.StartAhead(ops.CommandLine(path, name))
	}
}

// opRunning counts an op of that name as running until the function it
// returns is called. An Exec that begins after it finds what PrepareOp
// started before it.
func (n *Node) opRunning(name string) (done func()) {
	n.opsMu.Lock()
	if n.running == nil {
		n.running = map[string]int{}
	}
	n.running[name]++
	n.opsMu.Unlock()
	return func() {
		n.opsMu.Lock()
		n.running[name]--
		n.opsMu.Unlock()
	}
}

// WaitLinkRTT is LinkRTT once the transport's measure has its answer,
// waiting for it until ctx is done.
func (n *Node) WaitLinkRTT(ctx context.Context) (time.Duration, bool) {
	if n.extras.meter == nil {
		return 0, false
	}
	return n.extras.meter.WaitRTT(ctx)
}

// LinkRTT is the connection's measured round-trip time, when the
// transport measures it and has an answer (ok false otherwise).
func (n *Node) LinkRTT() (time.Duration, bool) {
	if n.extras.meter == nil {
		return 0, false
	}
	return n.extras.meter.RTT()
}
