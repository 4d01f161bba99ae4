package clustertest

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"sigs.k8s.io/swdt/internal/syncbuf"
)

// forward listens on a free port of the laptop's loopback and copies
// every connection to and from to, as docker's port publishing does for
// kind's API server; it stops with the cluster. It returns the address
// it listens on.
func (c *Cluster) forward(to string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	log := &syncbuf.Buffer{}
	c.logs["forward"] = log
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
	)
	track := func(cs ...net.Conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if conns == nil {
			return false
		}
		for _, c := range cs {
			conns[c] = struct{}{}
		}
		return true
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				fmt.Fprintf(log, "%s: dial %s: %v\n", time.Now().Format(time.RFC3339Nano), to, err)
				in.Close()
				continue
			}
			if !track(in, out) {
				in.Close()
				out.Close()
				return
			}
			wg.Add(2)
			go func() { defer wg.Done(); pipe(out, in) }()
			go func() { defer wg.Done(); pipe(in, out) }()
		}
	}()
	c.closers = append(c.closers, func() {
		l.Close()
		mu.Lock()
		for conn := range conns {
			conn.Close()
		}
		conns = nil
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String(), nil
}

// pipe copies src to dst, then half-closes dst's write side (or closes
// it), so that each direction ends on its own.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		return
	}
	dst.Close()
}
