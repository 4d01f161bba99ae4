//go:build linux

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"time"
)

// link is one emulated network path: rate limit and round-trip time,
// the same in both directions.
type link struct {
	name string
	// bitsPerSec is the bottleneck rate of each direction.
	bitsPerSec float64
	rtt        time.Duration
}

func (l link) String() string {
	return fmt.Sprintf("%s (%g Mbit/s, %s RTT)", l.name, l.bitsPerSec/1e6, l.rtt)
}

// bdp is the link's bandwidth-delay product in bytes.
func (l link) bdp() int { return int(l.bitsPerSec / 8 * l.rtt.Seconds()) }

// shaper is a TCP proxy on loopback that makes every connection through
// it behave like link: each direction serialises bytes at the link's rate
// behind a queue of about twice the bandwidth-delay product, then delays
// them by half the round-trip time. This kernel has no sch_netem, so the
// shaping is done in user space; probe checks what it achieves.
//
// The kernel completes a loopback connect at once; on the link, TCP's
// handshake costs what the shaper charges instead (handshake): the
// client's SYN reaches the server half a round trip after connect (t0),
// the SYN-ACK is back at t0+RTT, when connect returns and the client may
// send, and the client's ACK reaches the server at t0+1.5 RTT, when its
// accept returns and it may send. So the client's first bytes arrive no
// earlier than t0+1.5 RTT, and the server's reach the client no earlier
// than t0+2 RTT.
type shaper struct {
	l      link
	target string
	ln     net.Listener
	wg     sync.WaitGroup
	// trace, when set, gets a line for every segment the shaper delivers:
	// its connection, when it arrives (from the connection's accept),
	// its direction and size (bench shape -trace).
	trace io.Writer
	mu    sync.Mutex // serialises trace's lines
	conns int
}

func startShaper(l link, target string) (*shaper, error) { return startTracedShaper(l, target, nil) }

// startTracedShaper is startShaper with the segments it delivers written
// to trace (nil: none).
func startTracedShaper(l link, target string, trace io.Writer) (*shaper, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &shaper{l: l, target: target, ln: ln, trace: trace}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

func (s *shaper) addr() string { return s.ln.Addr().String() }

func (s *shaper) close() {
	_ = s.ln.Close()
	s.wg.Wait()
}

func (s *shaper) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", s.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		t0 := time.Now()
		toServer, toClient := s.handshake(t0)
		s.conns++
		id := s.conns
		go func() {
			var both sync.WaitGroup
			both.Add(2)
			go func() { defer both.Done(); s.pipe(c, up, toServer, s.tracer(id, t0, "->")) }()
			go func() { defer both.Done(); s.pipe(up, c, toClient, s.tracer(id, t0, "<-")) }()
			both.Wait()
			_ = c.Close()
			_ = up.Close()
		}()
	}
}

// handshake is when each direction of a connection accepted at t0 may
// first put bytes on the link: the client once its connect returns, one
// round trip after t0; the server once its accept returns, when the
// client's ACK arrives, half a round trip later.
func (s *shaper) handshake(t0 time.Time) (toServer, toClient time.Time) {
	return t0.Add(s.l.rtt), t0.Add(s.l.rtt * 3 / 2)
}

// tracer returns what pipe calls as it delivers n bytes of connection
// id (accepted at t0) in direction dir; nil without a trace.
func (s *shaper) tracer(id int, t0 time.Time, dir string) func(n int) {
	if s.trace == nil {
		return nil
	}
	return func(n int) {
		s.mu.Lock()
		defer s.mu.Unlock()
		fmt.Fprintf(s.trace, "conn %d %8.1f ms %s %d B\n", id, float64(time.Since(t0).Microseconds())/1000, dir, n)
	}
}

// chunk is a segment in flight: its bytes and when it leaves the link.
type chunk struct {
	b  []byte
	at time.Time
}

// pipe shapes one direction, whose sender may first send at open. The
// reader stamps each segment with the time its last byte leaves the
// bottleneck (never before open) plus half the RTT; the writer delivers
// it then. Bytes held (in the queue or on the wire) are bounded
// by the BDP in flight plus a queue of 2 BDP; past that the reader stops
// reading, and TCP's flow control pushes back on the sender.
func (s *shaper) pipe(src, dst net.Conn, open time.Time, delivered func(n int)) {
	const seg = 16 << 10
	limit := max(3*s.l.bdp(), 4*seg)
	var (
		mu     sync.Mutex
		cond   = sync.NewCond(&mu)
		held   int
		queue  = make(chan chunk, 4096)
		oneWay = s.l.rtt / 2
		perB   = time.Duration(float64(time.Second) * 8 / s.l.bitsPerSec)
		free   = open // when the bottleneck is free again
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range queue {
			if d := time.Until(c.at); d > 0 {
				time.Sleep(d)
			}
			_, err := dst.Write(c.b)
			if delivered != nil {
				delivered(len(c.b))
			}
			mu.Lock()
			held -= len(c.b)
			cond.Broadcast()
			mu.Unlock()
			if err != nil {
				_ = src.Close() // stop the reader; the connection is gone
				for range queue {
				}
				return
			}
		}
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	buf := make([]byte, seg)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			mu.Lock()
			for held+n > limit {
				cond.Wait()
			}
			held += n
			mu.Unlock()
			now := time.Now()
			free = later(free, now).Add(time.Duration(n) * perB)
			queue <- chunk{b: append([]byte(nil), buf[:n]...), at: free.Add(oneWay)}
		}
		if err != nil {
			break
		}
	}
	close(queue)
	<-done
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// probe measures the shaper with plain TCP: the median round trip of a
// one-byte ping-pong, and the throughput of a bulk transfer of about two
// seconds' worth of the link's rate.
func probe(l link) (rtt time.Duration, bitsPerSec float64, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				one := make([]byte, 1)
				for {
					if _, err := io.ReadFull(c, one); err != nil {
						return
					}
					if one[0] == 'b' { // bulk: count it, answer at the end
						n, _ := io.Copy(io.Discard, c)
						_, _ = fmt.Fprintf(c, "%d\n", n)
						return
					}
					if _, err := c.Write(one); err != nil {
						return
					}
				}
			}()
		}
	}()
	sh, err := startShaper(l, ln.Addr().String())
	if err != nil {
		return 0, 0, err
	}
	defer sh.close()
	c, err := net.Dial("tcp", sh.addr())
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	var rtts []time.Duration
	one := []byte{'p'}
	for range 9 {
		t := time.Now()
		if _, err := c.Write(one); err != nil {
			return 0, 0, err
		}
		if _, err := io.ReadFull(c, one); err != nil {
			return 0, 0, err
		}
		rtts = append(rtts, time.Since(t))
	}
	rtt = median(rtts)
	size := int64(l.bitsPerSec / 8 * 2)
	if _, err := c.Write([]byte{'b'}); err != nil {
		return 0, 0, err
	}
	t := time.Now()
	if _, err := io.CopyN(c, zeroReader{}, size); err != nil {
		return 0, 0, err
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		return 0, 0, err
	}
	var got int64
	if _, err := fmt.Fscan(c, &got); err != nil {
		return 0, 0, err
	}
	if got != size {
		return 0, 0, errors.New("bulk transfer lost bytes")
	}
	// The answer arrives one way after the last byte: take it off.
	el := time.Since(t) - rtt/2
	return rtt, float64(size*8) / el.Seconds(), nil
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// shapeAlone runs one shaper in front of -target until interrupted and
// prints its address: `bench shape -target ADDR -rtt 20ms -mbit 100`, to
// profile swdt and simnode by hand on a shaped link.
func shapeAlone(args []string) error {
	fs := flag.NewFlagSet("shape", flag.ContinueOnError)
	target := fs.String("target", "", "address to forward to")
	rtt := fs.Duration("rtt", 20*time.Millisecond, "round-trip time")
	mbit := fs.Float64("mbit", 100, "rate in Mbit/s")
	trace := fs.Bool("trace", false, "print every segment delivered (connection, ms since its accept, direction, bytes) on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *target == "" {
		return errors.New("-target is needed")
	}
	var to io.Writer
	if *trace {
		to = os.Stderr
	}
	s, err := startTracedShaper(link{name: "shape", bitsPerSec: *mbit * 1e6, rtt: *rtt}, *target, to)
	if err != nil {
		return err
	}
	fmt.Println("address:", s.addr())
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	<-c
	s.close()
	return nil
}
