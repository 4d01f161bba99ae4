//go:build !windows

package remote

import (
	"io"
	"net"
)

// dialAgent connects to the ssh-agent whose socket sock
// ($SSH_AUTH_SOCK) names; with sock empty there is none (nil, no error).
func dialAgent(sock string) (io.ReadWriteCloser, string, error) {
	if sock == "" {
		return nil, "", nil
	}
	c, err := net.Dial("unix", sock)
	return c, sock, err
}
