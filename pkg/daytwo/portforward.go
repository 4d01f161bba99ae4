package daytwo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
)

// streamOpenTimeout bounds the opening of one forwarded stream (a dial
// through a connection that has to be made again included).
const streamOpenTimeout = 30 * time.Second

// PortSpec is one [LOCAL:]REMOTE argument of swdt port-forward.
type PortSpec struct {
	// Local is the port on this machine; 0 picks a free one.
	Local int
	// Remote is the port on the node's loopback.
	Remote int
}

// ParsePorts reads [LOCAL:]REMOTE arguments: "10250" forwards local
// 10250 to the node's 10250, "8080:80" local 8080 to the node's 80 and
// ":6060" (or "0:6060") a free local port to the node's 6060.
func ParsePorts(args []string) ([]PortSpec, error) {
	if len(args) == 0 {
		return nil, exitcode.WithCode(exitcode.Usage, errors.New("name at least one port to forward: [LOCAL:]REMOTE, for example 10250 or 8080:80"))
	}
	out := make([]PortSpec, 0, len(args))
	for _, a := range args {
		local, remote, found := strings.Cut(a, ":")
		if !found {
			local, remote = a, a
		}
		var p PortSpec
		var err error
		if local != "" {
			p.Local, err = parsePort(local, true)
		}
		if err == nil {
			p.Remote, err = parsePort(remote, false)
		}
		if err != nil {
			return nil, exitcode.WithCode(exitcode.Usage, fmt.Errorf("port %q: %w; write [LOCAL:]REMOTE, for example 10250 or 8080:80 or :6060", a, err))
		}
		out = append(out, p)
	}
	return out, nil
}

func parsePort(s string, zeroOK bool) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 65535 || n == 0 && !zeroOK {
		return 0, fmt.Errorf("%q is not a port number (1-65535)", s)
	}
	return n, nil
}

// Forward is one port being forwarded.
type Forward struct {
	// Local is the address listened on here (127.0.0.1:10250).
	Local string `json:"local"`
	// Remote is the address on the node the streams go to.
	Remote string `json:"remote"`
}

// ForwardOptions are PortForward's hooks and settings.
type ForwardOptions struct {
	// Address is the local address to listen on (default 127.0.0.1).
	Address string
	// Ready is called once every port listens.
	Ready func(forwards []Forward)
	// Stream is called when a forwarded connection opens (err nil), when
	// one could not be opened on the node, and when the node's side of an
	// open one failed (err says why: through the Kubernetes API a refusal
	// only comes after the stream opened).
	Stream func(f Forward, err error)
	// Warn receives what the user must see about the connection, naming
	// the node.
	Warn func(msg string)
}

// PortForward listens on a local port for each of ports and carries every
// connection made to it to the port on the node's loopback, through the
// node's SSH connection (direct-tcpip), until ctx ends (Ctrl-C): then it
// stops listening, closes the streams and returns nil. A dropped SSH
// connection is dialled again for the next stream. A local port that is
// taken is an error before anything listens.
func PortForward(ctx context.Context, spec *v1alpha1.Node, connect fleet.Connector, ports []PortSpec, opts ForwardOptions) error {
	n, err := connect(ctx, spec, func(msg string) { opts.Warn("node " + spec.Name + ": " + msg) })
	if err != nil {
		return fmt.Errorf("node %s: %w", spec.Name, err)
	}
	defer n.Close()
	addr := opts.Address
	if addr == "" {
		addr = "127.0.0.1"
	}
	var lc net.ListenConfig
	listeners := make([]net.Listener, 0, len(ports))
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	forwards := make([]Forward, 0, len(ports))
	for _, p := range ports {
		l, err := lc.Listen(ctx, "tcp", net.JoinHostPort(addr, strconv.Itoa(p.Local)))
		if err != nil {
			return exitcode.WithCode(exitcode.Usage, fmt.Errorf("listen on %s port %d (on this machine): %w; pick another with LOCAL:%d", addr, p.Local, err, p.Remote))
		}
		listeners = append(listeners, l)
		forwards = append(forwards, Forward{Local: l.Addr().String(), Remote: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.Remote))})
		if beyondLoopback(l.Addr()) && opts.Warn != nil {
			opts.Warn(fmt.Sprintf("listening on %s, beyond this machine's loopback: anyone who reaches it reaches port %d on node %s's loopback, with no password; --address 127.0.0.1 keeps it to this machine", l.Addr(), p.Remote, spec.Name))
		}
	}
	if opts.Ready != nil {
		opts.Ready(forwards)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, l := range listeners {
		f := forwards[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := l.Accept()
				if err != nil {
					return // closed when ctx ends
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer c.Close()
					dctx, cancel := context.WithTimeout(ctx, streamOpenTimeout)
					s, err := n.DialTCP(dctx, f.Remote)
					cancel()
					if opts.Stream != nil && ctx.Err() == nil {
						opts.Stream(f, err)
					}
					if err != nil {
						return
					}
					defer s.Close()
					if err := pipe(ctx, c, s); err != nil && opts.Stream != nil && ctx.Err() == nil {
						opts.Stream(f, err)
					}
				}()
			}
		}()
	}
	<-ctx.Done()
	for _, l := range listeners {
		l.Close()
	}
	wg.Wait()
	return nil
}

// pipe copies both ways between a and b until both directions end or ctx
// does, passing on a half close. It returns the error reading b gave, if
// any (the node's side of a stream failed).
func pipe(ctx context.Context, a, b net.Conn) error {
	done := make(chan error, 2)
	half := func(dst net.Conn, src io.Reader) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	fromB := &readErr{r: b}
	go func() { half(a, fromB); done <- fromB.err }()
	go func() { half(b, a); done <- nil }()
	var failed error
	for range 2 {
		select {
		case err := <-done:
			failed = cmp.Or(failed, err)
		case <-ctx.Done():
			a.Close()
			b.Close()
			<-done
		}
	}
	return failed
}

// readErr is a reader that keeps its first error other than io.EOF.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && r.err == nil {
		r.err = err
	}
	return n, err
}

// beyondLoopback reports whether a listener's address takes connections
// from other machines: anything but a loopback address.
func beyondLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return !ok || !tcp.IP.IsLoopback()
}
