package kubeconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// DialTCP opens a stream to addr on the node's loopback (node.Forwarder)
// through pods/portforward of the node's HostProcess pod, WebSocket
// first and SPDY as kubectl port-forward falls back to. A HostProcess pod
// shares the node's network, so its port is the node's: containerd 1.7.15
// and 2.0 or later forward to it (an older one refuses, and the error says
// so). Only the loopback can be reached this way; another host needs SSH.
func (c *Conn) DialTCP(ctx context.Context, addr string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("forward to %s: %w", addr, err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return nil, fmt.Errorf("forward to %s: %q is not a TCP port", addr, portText)
	}
	if !loopback(host) {
		return nil, fmt.Errorf("forward to %s: through the Kubernetes API only the node's own loopback (127.0.0.1) can be reached; reach other hosts over SSH", addr)
	}
	dialer, err := c.forwardDialer()
	if err != nil {
		return nil, err
	}
	conn, err := dialStreams(ctx, dialer)
	if err != nil {
		return nil, c.forwardError(err)
	}
	headers := http.Header{}
	headers.Set(corev1.PortHeader, strconv.FormatUint(port, 10))
	headers.Set(corev1.PortForwardRequestIDHeader, "0")
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		conn.Close()
		return nil, c.forwardError(err)
	}
	// Nothing is written to the error stream: what the kubelet writes
	// there is why the port could not be reached.
	errStream.Close()
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		conn.Close()
		return nil, c.forwardError(err)
	}
	fc := &forwardConn{conn: conn, data: data, errDone: make(chan struct{}), local: forwardAddr("swdt"), remote: forwardAddr(c.opts.Node + ":" + portText)}
	go fc.watchErrors(errStream)
	return fc, nil
}

// loopback reports whether host names the loopback.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// forwardDialer dials pods/portforward of the node's pod.
func (c *Conn) forwardDialer() (httpstream.Dialer, error) {
	u := c.client.CoreV1().RESTClient().Post().Namespace(c.opts.Namespace).Resource("pods").Name(c.pod).SubResource("portforward").URL()
	ws, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, c.cfg)
	if err != nil {
		return nil, err
	}
	rt, upgrader, err := spdy.RoundTripperFor(c.cfg)
	if err != nil {
		return nil, err
	}
	sp := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	return portforward.NewFallbackDialerForStreaming(ws, sp, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	}), nil
}

// dialStreams dials, bounded by ctx (the dialers take no context).
func dialStreams(ctx context.Context, d httpstream.Dialer) (httpstream.Connection, error) {
	type dialed struct {
		conn     httpstream.Connection
		protocol string
		err      error
	}
	ch := make(chan dialed, 1)
	go func() {
		conn, protocol, err := d.Dial(portforward.PortForwardProtocolV1Name)
		ch <- dialed{conn, protocol, err}
	}()
	select {
	case r := <-ch:
		if r.err == nil && r.protocol != portforward.PortForwardProtocolV1Name {
			r.conn.Close()
			return nil, fmt.Errorf("the API server answered with protocol %q, not %s", r.protocol, portforward.PortForwardProtocolV1Name)
		}
		return r.conn, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.conn != nil {
				r.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// forwardError says what a refused port-forward needs.
func (c *Conn) forwardError(err error) error {
	msg := fmt.Sprintf("port-forward to pod %s/%s on node %s", c.opts.Namespace, c.pod, c.opts.Node)
	if strings.Contains(strings.ToLower(err.Error()), "forbidden") {
		return fmt.Errorf("%s: %w (your kubeconfig's user needs create on pods/portforward in namespace %s)", msg, err, c.opts.Namespace)
	}
	return fmt.Errorf("%s: %w", msg, err)
}

// forwardConn is one forwarded stream as a net.Conn. Deadlines are not
// supported (swdt port-forward copies until either side ends).
type forwardConn struct {
	conn          httpstream.Connection
	data          httpstream.Stream
	local, remote net.Addr

	// errDone is closed when the error stream has ended.
	errDone chan struct{}

	mu     sync.Mutex
	failed error // what the kubelet said on the error stream
	once   sync.Once
}

// watchErrors reads what the kubelet reports on the error stream: a
// message means the node refused the stream (nothing listens on the
// port, or the runtime cannot forward), and the data stream is ended.
// The kubelet resets the error stream after its message, and a reset
// can overtake it: a reset with no message is a refusal too (a stream
// that ends well ends its error stream without one).
func (f *forwardConn) watchErrors(s io.Reader) {
	defer close(f.errDone)
	msg, err := io.ReadAll(s)
	var failed error
	switch {
	case len(bytes.TrimSpace(msg)) > 0:
		failed = fmt.Errorf("the node refused the stream: %s (nothing listens on the port, or the Node's containerd, older than 1.7.15, cannot forward a HostProcess pod's ports)", bytes.TrimSpace(msg))
	case err != nil:
		failed = fmt.Errorf("the node refused the stream (its kubelet reset it: nothing listens on the port, or the runtime cannot forward a HostProcess pod's ports): %w", err)
	default:
		return
	}
	f.mu.Lock()
	f.failed = failed
	f.mu.Unlock()
	_ = f.data.Reset()
}

// Read reads what the node sends. At its end, and at a failure, it
// waits for the error stream, which the kubelet ends after the data
// stream: a refused stream ends with no data (or fails a write), and
// only the error stream says why.
func (f *forwardConn) Read(p []byte) (int, error) {
	n, err := f.data.Read(p)
	if err != nil {
		err = f.why(err)
	}
	return n, err
}

func (f *forwardConn) Write(p []byte) (int, error) {
	n, err := f.data.Write(p)
	if err != nil {
		err = f.why(err)
	}
	return n, err
}

// errorStreamWait bounds the wait for the error stream once the data
// stream ended.
const errorStreamWait = 5 * time.Second

// why is what ended the stream: the kubelet's word on the error stream,
// once it has ended (or the connection has, or errorStreamWait passed),
// else err.
func (f *forwardConn) why(err error) error {
	t := time.NewTimer(errorStreamWait)
	defer t.Stop()
	select {
	case <-f.errDone:
	case <-f.conn.CloseChan():
	case <-t.C:
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return f.failed
	}
	return err
}

// CloseWrite ends what is sent; what the node sends still arrives.
func (f *forwardConn) CloseWrite() error {
	if err := f.data.Close(); err != nil {
		return f.why(err)
	}
	return nil
}

// Close ends the stream and its connection to the API server.
func (f *forwardConn) Close() error {
	f.once.Do(func() {
		_ = f.data.Reset()
		_ = f.conn.Close()
	})
	return nil
}

func (f *forwardConn) LocalAddr() net.Addr  { return f.local }
func (f *forwardConn) RemoteAddr() net.Addr { return f.remote }

var errNoDeadlines = errors.New("a stream through pods/portforward has no deadlines")

func (f *forwardConn) SetDeadline(time.Time) error      { return errNoDeadlines }
func (f *forwardConn) SetReadDeadline(time.Time) error  { return errNoDeadlines }
func (f *forwardConn) SetWriteDeadline(time.Time) error { return errNoDeadlines }

// forwardAddr names an end of a forwarded stream.
type forwardAddr string

func (a forwardAddr) Network() string { return "portforward" }
func (a forwardAddr) String() string  { return string(a) }
