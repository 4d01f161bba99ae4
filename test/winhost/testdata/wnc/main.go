// Command wnc is a ProxyCommand for the Windows-host tier: it connects to
// HOST PORT and copies its stdin there and what comes back to its stdout,
// as `nc HOST PORT` does; Windows has no nc.
package main

import (
	"fmt"
	"io"
	"net"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: wnc HOST PORT")
		os.Exit(2)
	}
	c, err := net.Dial("tcp", net.JoinHostPort(os.Args[1], os.Args[2]))
	if err != nil {
		fmt.Fprintln(os.Stderr, "wnc:", err)
		os.Exit(1)
	}
	go func() {
		_, _ = io.Copy(c, os.Stdin)
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(os.Stdout, c)
}
