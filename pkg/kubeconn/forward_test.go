package kubeconn_test

import (
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/internal/echotest"
	"sigs.k8s.io/swdt/pkg/kubeconn"
	"sigs.k8s.io/swdt/pkg/node"
)

// TestPortForwardThroughPods: a stream to a port on the node's loopback
// goes through the real API server's pods/portforward to the node's
// (simulated) kubelet, which connects to the port as containerd does for
// a HostProcess pod: bytes go both ways, a client that stops sending
// still gets the answer, a port nothing listens on is the node's refusal,
// and another host is refused before anything is asked of the cluster.
// No SSH connection is opened.
func TestPortForwardThroughPods(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	c := clustertest.Start(t)
	ts := c.StartKubeletNode(t, "win-01")
	ctx := testContext(t)
	conn, err := kubeconn.Dial(ctx, kubeconn.Options{Kubeconfig: c.Kubeconfig, Node: "win-01"})
	if err != nil {
		t.Fatal(err)
	}
	n := node.New("win-01", conn, nil)
	if !n.Capabilities().PortForward {
		t.Fatalf("Capabilities = %+v, want PortForward", n.Capabilities())
	}
	// A server on the node's loopback (simnode's is this machine's).
	port := strconv.Itoa(echotest.Server(t, "echo:"))
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nothing := closed.Addr().String()
	closed.Close()

	tests := []struct {
		name, addr string
		// want is what the stream gives back after "ping\n" and the end
		// of what is sent; wantErr, a part of its error (the dial's, or
		// the first read's).
		want, wantErr string
	}{
		{name: "a port the node listens on", addr: "127.0.0.1:" + port, want: "echo:ping\nbye\n"},
		{name: "localhost", addr: "localhost:" + port, want: "echo:ping\nbye\n"},
		{name: "a port nothing listens on", addr: nothing, wantErr: "the node refused the stream"},
		{name: "another host", addr: "10.0.0.5:" + port, wantErr: "only the node's own loopback"},
		{name: "not a port", addr: "127.0.0.1:http", wantErr: "is not a TCP port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := n.DialTCP(ctx, tt.addr)
			var got []byte
			if err == nil {
				_, err = io.WriteString(s, "ping\n")
				if cw, ok := s.(interface{ CloseWrite() error }); ok && err == nil {
					err = cw.CloseWrite()
				}
				if err == nil {
					got, err = io.ReadAll(s)
				}
				s.Close()
			}
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("got %q, error %v; want an error with %q", got, err, tt.wantErr)
				}
			case err != nil || string(got) != tt.want:
				t.Errorf("got %q, error %v; want %q", got, err, tt.want)
			}
		})
	}
	if got := ts.Connections(); got != 0 {
		t.Errorf("simnode saw %d SSH connections, want none", got)
	}
}
