//go:build windows

package remote

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"

	"golang.org/x/sys/windows"
)

// AgentPipe is where OpenSSH for Windows' ssh-agent service listens: the
// Windows OpenSSH client uses it when SSH_AUTH_SOCK is not set.
const AgentPipe = `\\.\pipe\openssh-ssh-agent`

// dialAgent connects to the ssh-agent sock ($SSH_AUTH_SOCK) names, as
// OpenSSH for Windows does: a named pipe path is opened as a file, any
// other path is an AF_UNIX socket (Windows 10 1803 and later), and with
// sock empty the ssh-agent service's pipe is used when it is there (its
// absence is no error: the service is off by default).
func dialAgent(sock string) (io.ReadWriteCloser, string, error) {
	if sock == "" {
		c, err := openPipe(AgentPipe)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, AgentPipe, nil
		}
		return c, AgentPipe, err
	}
	if strings.HasPrefix(sock, `\\.\pipe\`) || strings.HasPrefix(sock, `//./pipe/`) {
		c, err := openPipe(sock)
		return c, sock, err
	}
	c, err := net.Dial("unix", sock)
	return c, sock, err
}

// openPipe opens a named pipe's client end for reading and writing, for
// overlapped I/O. Go then waits for the pipe on its I/O completion port,
// and Close ends a read the agent client's reader has pending. A handle
// opened for synchronous I/O cannot be closed reliably with such a read:
// Close's CancelIoEx misses a read that starts just after it (and does not
// reach synchronous reads at all under Wine), and the close then waits
// forever for an agent that waits for the next request.
func openPipe(name string) (io.ReadWriteCloser, error) {
	return os.OpenFile(name, os.O_RDWR|windows.O_FILE_FLAG_OVERLAPPED, 0)
}
