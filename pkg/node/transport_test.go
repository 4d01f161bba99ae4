package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/remote"
)

// lostConn is a node whose connection drops during every op, as
// remote.Client reports it.
type lostConn struct{ floodConn }

func (c *lostConn) Exec(context.Context, string, io.Reader, io.Writer, io.Writer) (int, error) {
	return -1, fmt.Errorf("%w (the command may or may not have completed): %w", remote.ErrConnectionLost, io.EOF)
}

// TestTransportErrorSpeaksOfTheNode: an op the connection did not finish
// is said as the op on the node; its command line is in the debug log
// only.
func TestTransportErrorSpeaksOfTheNode(t *testing.T) {
	var log strings.Builder
	n := node.New("win1", &lostConn{}, slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	_, err := n.Facts(context.Background())
	var te *node.TransportError
	if !errors.As(err, &te) || te.Node != "win1" || te.Op != ops.NodeFacts.Name || !errors.Is(err, remote.ErrConnectionLost) {
		t.Fatalf("Facts: %v (%T), want a *node.TransportError of %s on win1 that is remote.ErrConnectionLost", err, err, ops.NodeFacts.Name)
	}
	want := "op " + ops.NodeFacts.Name + " on node win1: ssh connection lost"
	if msg := err.Error(); !strings.HasPrefix(msg, want) || strings.Contains(msg, "cmd.exe") || strings.Count(msg, ops.NodeFacts.Name) != 1 {
		t.Errorf("error %q, want it to start %q, name the op once and hold no command line", msg, want)
	}
	if !strings.Contains(log.String(), "cmd.exe") {
		t.Errorf("the debug log has no command line:\n%s", log.String())
	}
}

// TestCapabilities: a connection with Conn's methods alone can do what
// every node does, and the verbs that need more say it cannot.
func TestCapabilities(t *testing.T) {
	n := node.New("win1", &floodConn{}, nil)
	if got, want := n.Capabilities(), (node.Capabilities{Encoding: true, Attachments: true}); got != want {
		t.Errorf("Capabilities = %+v, want %+v", got, want)
	}
	if _, err := n.DialTCP(context.Background(), "127.0.0.1:80"); err == nil || !strings.Contains(err.Error(), "cannot forward ports") {
		t.Errorf("DialTCP: %v, want the connection cannot forward ports", err)
	}
	if rtt, ok := n.LinkRTT(); ok {
		t.Errorf("LinkRTT = %s, true on a connection that does not measure it", rtt)
	}
}
