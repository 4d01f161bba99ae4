//go:build linux

package main

import (
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/syncbuf"
)

// TestShaperChargesTheHandshake: through a 200 ms shape a new connection
// costs what TCP's handshake costs on such a link before anything is
// answered: a client that speaks first hears back no earlier than two
// round trips after its connect (the handshake's and its request's), and
// its bytes reach the server no earlier than 1.5; a server that speaks
// first is heard two round trips after the connect.
func TestShaperChargesTheHandshake(t *testing.T) {
	const rtt = 200 * time.Millisecond
	tests := []struct {
		name         string
		clientFirst  bool
		atServer     time.Duration // the client's first byte at the server, no earlier
		answerClient time.Duration // the server's first byte at the client, no earlier
	}{
		{name: "the client speaks first (a request)", clientFirst: true, atServer: 3 * rtt / 2, answerClient: 2 * rtt},
		{name: "the server speaks first (an SSH banner)", answerClient: 2 * rtt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			// The server answers one byte with one, or speaks first.
			heard := make(chan time.Time, 1)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				one := make([]byte, 1)
				if tt.clientFirst {
					if _, err := io.ReadFull(c, one); err != nil {
						return
					}
					heard <- time.Now()
				}
				_, _ = c.Write(one)
				_, _ = io.Copy(io.Discard, c)
			}()
			sh, err := startShaper(link{name: "test", bitsPerSec: 100e6, rtt: rtt}, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer sh.close()
			t0 := time.Now()
			c, err := net.Dial("tcp", sh.addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			one := []byte{'x'}
			if tt.clientFirst {
				if _, err := c.Write(one); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := io.ReadFull(c, one); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(t0); d < tt.answerClient {
				t.Errorf("the server's first byte reached the client %s after connect, want no earlier than %s", d, tt.answerClient)
			}
			if tt.clientFirst {
				if d := (<-heard).Sub(t0); d < tt.atServer {
					t.Errorf("the client's first byte reached the server %s after connect, want no earlier than %s", d, tt.atServer)
				}
			}
		})
	}
}

// TestShaperTrace: with a trace, the shaper writes a line for every
// segment it delivers, in each direction, with its connection, its time
// since the connection's accept and its size.
func TestShaperTrace(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c) // an echo
	}()
	trace := &syncbuf.Buffer{}
	sh, err := startTracedShaper(link{name: "test", bitsPerSec: 100e6, rtt: 10 * time.Millisecond}, ln.Addr().String(), trace)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", sh.addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, 5)
	if _, err := io.ReadFull(c, back); err != nil {
		t.Fatal(err)
	}
	defer sh.close()
	defer c.Close()
	// The echo's line is written just after its bytes are delivered.
	deadline := time.Now().Add(time.Minute)
	for strings.Count(trace.String(), "\n") < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	line := regexp.MustCompile(`^conn 1 +[0-9]+\.[0-9] ms (->|<-) 5 B$`)
	lines := strings.Split(strings.TrimSpace(trace.String()), "\n")
	dirs := map[string]bool{}
	for _, l := range lines {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("trace line %q is not a segment's; the trace:\n%s", l, trace.String())
		}
		dirs[m[1]] = true
	}
	if !dirs["->"] || !dirs["<-"] {
		t.Errorf("the trace has not both directions of the echo:\n%s", trace.String())
	}
}
