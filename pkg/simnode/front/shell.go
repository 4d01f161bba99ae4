package front

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/pkg/simnode/programs"
	"sigs.k8s.io/swdt/pkg/simnode/simos"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The login shell of a session, what Windows OpenSSH starts for `ssh
// HOST` (cmd.exe) and for `ssh -t HOST COMMAND` (cmd.exe /c COMMAND). It
// is a small cmd.exe look-alike, not cmd.exe: each line is split into
// words at spaces (double quotes group, as cmd.exe's programs read them),
// and the first word names a program simnode plays (hostname, whoami,
// timeout, sc, choco, cmd /c ...) or one of the built-ins echo, type, cd,
// mode con and exit [N]. It has no variables, pipes or redirection.
// With a PTY it echoes what is typed, and Ctrl-C (byte 0x03) interrupts
// the running program (exit status 0xC000013A) or discards the line, as
// the console does; what is typed while a program runs waits for the
// next prompt. Without a PTY it reads lines and echoes nothing.

// statusControlCExit is STATUS_CONTROL_C_EXIT, the exit status of a
// console program ended by Ctrl-C.
const statusControlCExit = 0xC000013A

// ptyState is a session's terminal size, from pty-req and window-change.
type ptyState struct {
	mu            sync.Mutex
	width, height int
}

func (p *ptyState) size() (w, h int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.width, p.height
}

// parsePtyReq reads an RFC 4254 6.2 pty-req.
func parsePtyReq(payload []byte) (*ptyState, error) {
	var r struct {
		Term                  string
		Columns, Rows, PW, PH uint32
		Modes                 string
	}
	if err := ssh.Unmarshal(payload, &r); err != nil {
		return nil, err
	}
	return &ptyState{width: int(r.Columns), height: int(r.Rows)}, nil
}

// resize applies an RFC 4254 6.7 window-change.
func (p *ptyState) resize(payload []byte) bool {
	var r struct{ Columns, Rows, PW, PH uint32 }
	if ssh.Unmarshal(payload, &r) != nil {
		return false
	}
	p.set(int(r.Columns), int(r.Rows))
	return true
}

func (p *ptyState) set(width, height int) {
	p.mu.Lock()
	p.width, p.height = width, height
	p.mu.Unlock()
}

// shell is one session's shell.
type shell struct {
	n   *simos.Node
	out io.Writer
	pty *ptyState // nil without a terminal
	cwd string
	// in delivers what the client sends; pending holds what was read
	// and not handled yet.
	in      <-chan []byte
	pending []byte
	lastCR  bool
}

// serveShell runs the interactive shell, or command alone when it is not
// empty, and returns the exit status. It ends with ctx (the session's).
func (cs *connState) serveShell(ctx context.Context, ch ssh.Channel, reqs <-chan *ssh.Request, pty *ptyState, command string) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for r := range reqs {
			ok := r.Type == "window-change" && pty != nil && pty.resize(r.Payload) || r.Type == "env" || r.Type == "signal"
			if r.WantReply {
				_ = r.Reply(ok, nil)
			}
		}
		cancel() // the client closed the session
	}()
	n := cs.srv.node(cs.account)
	sh := &shell{n: n, out: ch, pty: pty, cwd: `C:\Users\` + cs.account.Name, in: feed(ctx, ch)}
	if command != "" {
		status, _ := sh.runLine(ctx, command)
		return status
	}
	return sh.interactive(ctx)
}

// feed delivers what r reads, until it ends or ctx does.
func feed(ctx context.Context, r io.Reader) <-chan []byte {
	in := make(chan []byte)
	go func() {
		defer close(in)
		for {
			buf := make([]byte, 1024)
			k, err := r.Read(buf)
			if k > 0 {
				select {
				case in <- buf[:k]:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return in
}

// next returns the next byte the client sent; ok is false at its end.
func (sh *shell) next(ctx context.Context) (byte, bool) {
	for len(sh.pending) == 0 {
		select {
		case b, ok := <-sh.in:
			if !ok {
				return 0, false
			}
			sh.pending = b
		case <-ctx.Done():
			return 0, false
		}
	}
	b := sh.pending[0]
	sh.pending = sh.pending[1:]
	return b, true
}

func (sh *shell) echo(s string) {
	if sh.pty != nil {
		_, _ = io.WriteString(sh.out, s)
	}
}

func (sh *shell) prompt() { _, _ = io.WriteString(sh.out, sh.cwd+">") }

// interactive reads and runs lines until exit or the end of input.
func (sh *shell) interactive(ctx context.Context) int {
	_, _ = fmt.Fprintf(sh.out, "Microsoft Windows [Version 10.0.20348.2700]\r\n(c) Microsoft Corporation. All rights reserved.\r\n(simnode: a cmd.exe look-alike, see pkg/simnode/front/shell.go)\r\n\r\n")
	sh.prompt()
	var line []byte
	status := 0
	for {
		b, ok := sh.next(ctx)
		if !ok {
			return status
		}
		cr := sh.lastCR
		sh.lastCR = b == '\r'
		switch {
		case b == '\n' && cr:
			// The \n of \r\n.
		case b == '\r' || b == '\n':
			sh.echo("\r\n")
			var exit bool
			if strings.TrimSpace(string(line)) != "" {
				status, exit = sh.runLine(ctx, string(line))
			}
			if exit {
				return status
			}
			line = line[:0]
			_, _ = io.WriteString(sh.out, "\r\n")
			sh.prompt()
		case b == 0x03:
			sh.echo("^C\r\n")
			line = line[:0]
			sh.prompt()
		case b == 0x7f || b == 0x08:
			if len(line) > 0 {
				line = line[:len(line)-1]
				sh.echo("\b \b")
			}
		case b >= 0x20:
			line = append(line, b)
			sh.echo(string(b))
		}
	}
}

// runLine runs one command line; exit is true for the exit built-in.
func (sh *shell) runLine(ctx context.Context, line string) (status int, exit bool) {
	words := splitWords(line)
	if len(words) == 0 {
		return 0, false
	}
	name, args := strings.ToLower(words[0]), words[1:]
	switch name {
	case "exit":
		code := 0
		if len(args) > 0 && strings.EqualFold(args[0], "/b") {
			args = args[1:]
		}
		if len(args) > 0 {
			code, _ = strconv.Atoi(args[0])
		}
		return code, true
	case "cd":
		if len(args) == 0 {
			sh.printf("%s\r\n", sh.cwd)
			return 0, false
		}
		if fi, err := sh.n.Stat(args[0]); err != nil || !fi.IsDir {
			sh.printf("The system cannot find the path specified.\r\n")
			return 1, false
		}
		sh.cwd = strings.TrimRight(args[0], `\`)
		return 0, false
	case "mode":
		if sh.pty == nil {
			sh.printf("The handle is invalid.\r\n")
			return 1, false
		}
		w, h := sh.pty.size()
		sh.printf("\r\nStatus for device CON:\r\n----------------------\r\n    Lines:          %d\r\n    Columns:        %d\r\n", h, w)
		return 0, false
	case "echo", "type":
		words = append([]string{"cmd.exe", "/c"}, words...)
		args = words[1:]
	}
	return sh.runProgram(ctx, words[0], args), false
}

// runProgram plays a program until it ends or Ctrl-C interrupts it.
func (sh *shell) runProgram(ctx context.Context, program string, args []string) int {
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	type result struct {
		res winos.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := programs.Play(pctx, sh.n.Node, winos.Command{Path: program, Args: args, SearchPath: true})
		done <- result{res, err}
	}()
	interrupted := false
	// takeCtrlC interrupts the program at a Ctrl-C typed after its line
	// and before the next one (a later one is the next program's): the
	// console delivers it at once, even when typed ahead.
	takeCtrlC := func() {
		line := sh.pending
		if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
			line = line[:i]
		}
		i := bytes.IndexByte(line, 0x03)
		if i < 0 || interrupted {
			return
		}
		interrupted = true
		sh.echo("^C")
		stop()
		sh.pending = append(sh.pending[:i:i], sh.pending[i+1:]...)
	}
	takeCtrlC()
	in := sh.in
	var r result
	for waiting := true; waiting; {
		select {
		case r = <-done:
			waiting = false
		case b, ok := <-in:
			if !ok {
				in = nil // no more input: the program runs on
				continue
			}
			// Anything but Ctrl-C waits for the next prompt.
			sh.pending = append(sh.pending, b...)
			takeCtrlC()
		}
	}
	switch {
	case interrupted:
		return statusControlCExit
	case r.err != nil:
		var we *winos.Error
		if errors.As(r.err, &we) && we.Code == winos.ErrFileNotFound {
			sh.printf("'%s' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n", program)
			return 9009
		}
		sh.printf("%v\r\n", r.err)
		return 1
	}
	_, _ = sh.out.Write(r.res.Stdout)
	_, _ = sh.out.Write(r.res.Stderr)
	return r.res.ExitCode
}

func (sh *shell) printf(format string, args ...any) { _, _ = fmt.Fprintf(sh.out, format, args...) }

// splitWords splits a command line at spaces; double quotes group words
// and are removed, as programs' argument parsing does.
func splitWords(line string) []string {
	var words []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range line {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
