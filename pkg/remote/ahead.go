package remote

import (
	"context"
	"io"
	"time"

	"golang.org/x/crypto/ssh"
)

// aheadCmd is a command StartAhead started: ready delivers its session
// once the command runs (nil when it could not be started).
type aheadCmd struct {
	cmd   string
	asked time.Time
	ready chan *startedCmd
}

// startedCmd is a command running on its own session, its input not yet
// sent: the program waits for it.
type startedCmd struct {
	s              *ssh.Session
	stdin          io.WriteCloser
	stdout, stderr io.Reader
	// started is when the server confirmed the exec.
	started time.Time
}

// StartAhead starts cmd in the background on the current connection,
// with its input held back: the Exec of the same command line that
// follows within spareFresh (or later, while the keepalive hears from the
// node: it asks every heardWithin/4 while a command waits) then only
// sends its input and reads the output, one round trip sooner, and the
// program has started by then (on Windows, cmd.exe and the agent take a
// while to). Asked again for the same command, it keeps the one waiting
// when that one could still be taken. The command must do nothing before
// it has read all its input: when no Exec takes it, its session is closed
// and the program reads end of input alone. One command is held at a
// time; it never dials.
func (c *Client) StartAhead(cmd string) {
	c.mu.Lock()
	cn := c.cur
	c.mu.Unlock()
	if cn != nil {
		cn.startAhead(cmd)
	}
}

func (cn *conn) startAhead(cmd string) {
	cn.spareMu.Lock()
	defer cn.spareMu.Unlock()
	if cn.dead() {
		return
	}
	if old := cn.ahead; old != nil {
		if old.cmd == cmd && (time.Since(old.asked) < spareFresh/2 || cn.heardFrom()) {
			return // on its way, fresh, or on a connection heard from
		}
		go old.drop()
	}
	a := &aheadCmd{cmd: cmd, asked: time.Now(), ready: make(chan *startedCmd, 1)}
	cn.ahead = a
	cn.log.Debug("ssh start ahead", "cmd", shorten(cmd))
	// The spare serves it whatever its age: a command that only waits
	// for its input does nothing on a connection that dropped, and the
	// reply to its exec says the connection lives.
	spare := cn.spare
	cn.spare = nil
	go func() { a.ready <- cn.start(cmd, spare) }()
}

// start runs cmd on a session of its own (spare's when there is one)
// with its input, output and error output as pipes; nil when it could
// not be started.
func (cn *conn) start(cmd string, spare chan spareSession) *startedCmd {
	var s *ssh.Session
	if spare != nil {
		s = (<-spare).s
	}
	if s == nil {
		var err error
		if s, err = cn.ssh.NewSession(); err != nil {
			return nil
		}
	}
	st := &startedCmd{s: s}
	var err error
	if st.stdin, err = s.StdinPipe(); err == nil {
		if st.stdout, err = s.StdoutPipe(); err == nil {
			if st.stderr, err = s.StderrPipe(); err == nil {
				err = s.Start(cmd)
			}
		}
	}
	if err != nil {
		s.Close()
		return nil
	}
	st.started = time.Now()
	// The channel of the command after it.
	cn.openSpare()
	return st
}

// takeAhead returns the command started ahead when it is cmd, running
// and started within spareFresh, or on a connection heard from within
// heardWithin (waiting for its
// start when it is on its way, until ctx is done or the connection
// drops); nil otherwise, and a stale one is closed. A command line that
// differs leaves it for a later Exec.
func (cn *conn) takeAhead(ctx context.Context, cmd string) *startedCmd {
	cn.spareMu.Lock()
	a := cn.ahead
	if a == nil || a.cmd != cmd {
		cn.spareMu.Unlock()
		return nil
	}
	cn.ahead = nil
	cn.spareMu.Unlock()
	var st *startedCmd
	select {
	case st = <-a.ready:
	case <-ctx.Done():
		go a.drop()
		return nil
	case <-cn.done:
		go a.drop()
		return nil
	}
	if st == nil {
		return nil
	}
	if (time.Since(st.started) > spareFresh && !cn.heardFrom()) || cn.dead() {
		st.s.Close()
		return nil
	}
	return st
}

// drop closes the command once it has started (or failed to).
func (a *aheadCmd) drop() {
	if st := <-a.ready; st != nil {
		st.s.Close()
	}
}

// feed sends stdin to the command and copies its output to stdout and
// stderr (nil discards); the function it returns waits for the command
// to exit and for its output to be copied.
func (st *startedCmd) feed(stdin io.Reader, stdout, stderr io.Writer) func() error {
	copied := make(chan struct{}, 2)
	for _, p := range []struct {
		w io.Writer
		r io.Reader
	}{{stdout, st.stdout}, {stderr, st.stderr}} {
		w := p.w
		if w == nil {
			w = io.Discard
		}
		go func() {
			_, _ = io.Copy(w, p.r)
			copied <- struct{}{}
		}()
	}
	go func() {
		if stdin != nil {
			_, _ = io.Copy(st.stdin, stdin)
		}
		_ = st.stdin.Close()
	}()
	return func() error {
		err := st.s.Wait()
		<-copied
		<-copied
		return err
	}
}
