package node_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"runtime"
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
	if _, err := n.DialTCP(context.Background(), "127.0.0.1:80"); err == nil || !strings.Contains(err.Error(), "cannot forward ports") ||
		!strings.Contains(err.Error(), "swdt port-forward needs an SSH connection to the node") {
		t.Errorf("DialTCP: %v, want the connection cannot forward ports, and that port-forward needs SSH", err)
	}
	if _, err := n.Shell(context.Background(), node.ShellOptions{}); err == nil || !strings.Contains(err.Error(), "swdt ssh needs an SSH connection to the node") {
		t.Errorf("Shell: %v, want that swdt ssh needs SSH", err)
	}
	if rtt, ok := n.LinkRTT(); ok {
		t.Errorf("LinkRTT = %s, true on a connection that does not measure it", rtt)
	}
}

// TestOnlyTransportsImportRemote: workflows and engines reach nodes
// through this package and never speak SSH (DESIGN.md §3.1); only the
// node API, the transports and simnode (the SSH server twin) import
// pkg/remote.
func TestOnlyTransportsImportRemote(t *testing.T) {
	const remotePkg = "sigs.k8s.io/swdt/pkg/remote"
	allowed := func(pkg string) bool {
		for _, p := range []string{"sigs.k8s.io/swdt/pkg/node", remotePkg, "sigs.k8s.io/swdt/pkg/kubeconn", "sigs.k8s.io/swdt/pkg/simnode"} {
			if pkg == p || strings.HasPrefix(pkg, p+"/") {
				return true
			}
		}
		return false
	}
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "sigs.k8s.io/swdt/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	listed := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		listed++
		if allowed(f[0]) {
			continue
		}
		for _, imp := range f[1:] {
			if imp == remotePkg {
				t.Errorf("%s imports %s: reach the node through pkg/node (its Conn, capabilities and errors)", f[0], remotePkg)
			}
		}
	}
	if listed < 20 {
		t.Fatalf("go list named %d packages:\n%s", listed, out)
	}
}
