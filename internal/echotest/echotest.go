// Package echotest is the service behind a forwarded port in tests: a
// line echo server on the loopback, and a client that asks it one line.
package echotest

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// Server listens on the loopback until the test ends and answers each
// line with prefix and the line, and "bye" once the client has stopped
// sending (a half close); it returns its port.
func Server(t testing.TB, prefix string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if _, err := io.WriteString(c, prefix+sc.Text()+"\n"); err != nil {
						return
					}
				}
				_, _ = io.WriteString(c, "bye\n")
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// Ask sends line to addr and returns the first line of the answer.
func Ask(t testing.TB, addr, line string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		t.Fatal(err)
	}
	answer, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer from %s: %v", addr, err)
	}
	return answer
}
