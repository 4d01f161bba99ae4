package remote

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// proxyConn is a running ProxyCommand whose stdin and stdout carry the
// SSH connection. Closing it kills the command and whatever it started.
type proxyConn struct {
	cmd     *exec.Cmd
	r       *os.File // the command's stdout
	w       *os.File // the command's stdin
	stderr  *tailBuffer
	kill    func()
	done    chan struct{} // closed once the command was waited for
	waitErr error

	closeOnce sync.Once
	// exited is true when the command had ended when Close was called.
	exited bool
}

// plainToken are the characters a ProxyCommand token may hold without
// quotes: none of them means anything to sh or cmd.exe.
const plainToken = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789@+=:,./_-"

// startProxyCommand runs command with the platform's shell (sh -c on
// Unix, cmd /c on Windows).
func startProxyCommand(command string) (*proxyConn, error) {
	cmd := shellCommand(command)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start ProxyCommand: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("start ProxyCommand: %w", err)
	}
	pc := &proxyConn{cmd: cmd, r: outR, w: inW, stderr: &tailBuffer{max: 2048}, done: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, pc.stderr
	// Wait returns even if something the command started keeps its
	// stderr open.
	cmd.WaitDelay = time.Second
	pc.kill, err = startKillable(cmd)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start ProxyCommand: %w", err)
	}
	go func() {
		pc.waitErr = cmd.Wait()
		close(pc.done)
	}()
	return pc, nil
}

func (pc *proxyConn) Read(b []byte) (int, error)  { return pc.r.Read(b) }
func (pc *proxyConn) Write(b []byte) (int, error) { return pc.w.Write(b) }

// Close kills the command and what it started, and waits for it.
func (pc *proxyConn) Close() error {
	pc.closeOnce.Do(func() {
		pc.w.Close()
		select {
		case <-pc.done:
			pc.exited = true
		default:
		}
		pc.kill()
		<-pc.done
		pc.r.Close()
	})
	return nil
}

// explain adds to err how the command ended, after Close: its exit status
// when it ended by itself, and the end of what it wrote to stderr.
func (pc *proxyConn) explain(err error) error {
	var why []string
	if pc.exited || endedByItself(pc.cmd.ProcessState) {
		status := "exit status 0"
		if pc.waitErr != nil {
			status = pc.waitErr.Error()
		}
		why = append(why, "the ProxyCommand ended: "+status)
	}
	if s := strings.TrimSpace(pc.stderr.String()); s != "" {
		why = append(why, "its stderr: "+s)
	}
	if len(why) == 0 {
		return err
	}
	return fmt.Errorf("%w (%s)", err, strings.Join(why, "; "))
}

func (pc *proxyConn) LocalAddr() net.Addr  { return &net.TCPAddr{IP: net.IPv4zero} }
func (pc *proxyConn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4zero} }

func (pc *proxyConn) SetDeadline(t time.Time) error {
	return errors.Join(pc.SetReadDeadline(t), pc.SetWriteDeadline(t))
}
func (pc *proxyConn) SetReadDeadline(t time.Time) error  { return pc.r.SetReadDeadline(t) }
func (pc *proxyConn) SetWriteDeadline(t time.Time) error { return pc.w.SetWriteDeadline(t) }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
