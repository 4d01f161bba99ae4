package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// WindowSize is a terminal's size in characters.
type WindowSize struct {
	Width, Height int
}

// ShellOptions say what Shell runs and where its terminal's bytes go.
type ShellOptions struct {
	// Command is the command line the node's login shell runs (cmd.exe
	// on Windows OpenSSH); "" starts the interactive shell itself.
	Command string
	// Term is the TERM the PTY emulates (default xterm-256color).
	Term string
	// Size is the terminal's size when the PTY is made (default 80x24).
	Size WindowSize
	// Resize delivers the terminal's new size after each change; each
	// is passed on as a window-change request. May be nil.
	Resize <-chan WindowSize
	// Stdin is what the user types, in raw mode: Ctrl-C arrives as a
	// byte and the remote PTY turns it into an interrupt. Nil sends
	// nothing.
	Stdin io.Reader
	// Stdout receives the PTY's output (a PTY merges stderr into it).
	Stdout io.Writer
}

// Shell runs an interactive session with a PTY on the node, as `ssh -tt`
// does, and returns the remote exit status (a non-zero status is not an
// error). When ctx ends the session is closed and Shell returns ctx's
// error. It opens the session on a live connection, reconnecting once
// when the connection was found dead, and never runs anything twice.
func (c *Client) Shell(ctx context.Context, opts ShellOptions) (int, error) {
	what := "open a shell on " + c.t.addr
	if opts.Command != "" {
		what = fmt.Sprintf("run %q with a terminal on %s", shorten(opts.Command), c.t.addr)
	}
	sess, cn, err := c.session(ctx)
	if err != nil {
		return -1, fmt.Errorf("%s: %w", what, err)
	}
	defer sess.Close()
	term := opts.Term
	if term == "" {
		term = "xterm-256color"
	}
	size := opts.Size
	if size.Width <= 0 || size.Height <= 0 {
		size = WindowSize{Width: 80, Height: 24}
	}
	modes := ssh.TerminalModes{ssh.ECHO: 1, ssh.TTY_OP_ISPEED: 38400, ssh.TTY_OP_OSPEED: 38400}
	if err := sess.RequestPty(term, size.Height, size.Width, modes); err != nil {
		return -1, fmt.Errorf("%s: ask for a terminal: %w", what, err)
	}
	// One writer for both streams, written under a lock: the session
	// copies each in its own goroutine, and a writer with ReadFrom (a
	// bytes.Buffer) must not be filled by two at once.
	out := &serialWriter{w: opts.Stdout}
	if opts.Stdout == nil {
		out.w = io.Discard
	}
	sess.Stdin, sess.Stdout, sess.Stderr = opts.Stdin, out, out
	if opts.Command == "" {
		err = sess.Shell()
	} else {
		err = sess.Start(opts.Command)
	}
	if err != nil {
		if cn.lost(err) {
			err = fmt.Errorf("%w: %w", ErrConnectionLost, err)
		}
		return -1, fmt.Errorf("%s: %w", what, err)
	}
	waited := make(chan error, 1)
	go func() { waited <- sess.Wait() }()
	resize := opts.Resize
	for {
		select {
		case sz, ok := <-resize:
			if !ok {
				resize = nil
			} else {
				// A server that refuses the change keeps the old size;
				// the session goes on.
				_ = sess.WindowChange(sz.Height, sz.Width)
			}
			continue
		case err = <-waited:
		case <-ctx.Done():
			sess.Close()
			t := time.NewTimer(cancelGrace)
			select {
			case <-waited:
			case <-t.C:
			}
			t.Stop()
			return -1, fmt.Errorf("%s: %w", what, ctx.Err())
		}
		break
	}
	var ee *ssh.ExitError
	var missing *ssh.ExitMissingError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		return ee.ExitStatus(), nil
	case errors.As(err, &missing) && !cn.dead():
		// The shell ended without a status (a closed window).
		return 0, nil
	case errors.Is(err, io.EOF) && !cn.dead():
		// x/crypto/ssh's Wait returns a copy's error only after a status
		// of 0 came back: this one is stdin's copy, which wrote to the
		// channel the server closed when the command was done.
		return 0, nil
	}
	if cn.lost(err) || cn.dead() {
		return -1, fmt.Errorf("%s: %w: %w", what, ErrConnectionLost, err)
	}
	return -1, fmt.Errorf("%s: %w", what, err)
}

// session opens a session on a live connection, replacing a dead one once.
func (c *Client) session(ctx context.Context) (*ssh.Session, *conn, error) {
	var (
		cn   *conn
		sess *ssh.Session
	)
	err := withRetry(ctx, "open ssh session on "+c.t.addr, sessionRetry, func(ctx context.Context, attempt int) error {
		var err error
		if cn, err = c.conn(ctx); err != nil {
			return err
		}
		err = do(ctx, cn, func() error {
			s := cn.takeSpare()
			if s == nil {
				var err error
				if s, err = cn.ssh.NewSession(); err != nil {
					return err
				}
			}
			if ctx.Err() != nil {
				s.Close()
				return ctx.Err()
			}
			sess = s
			return nil
		})
		if cn.lost(err) {
			c.log.Debug("ssh connection lost opening a session, reconnecting", "addr", c.t.addr, "err", err)
			return fmt.Errorf("%w: %w", ErrConnectionLost, err)
		}
		return err
	})
	return sess, cn, err
}

// serialWriter serialises writes to w and hides any ReadFrom of w.
type serialWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *serialWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
