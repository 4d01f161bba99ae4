package front

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/swdt/pkg/kubeconn/filescript"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode/kubelet"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// hostProcessAccount is the account of a HostProcess container that runs
// as NT AUTHORITY\SYSTEM.
var hostProcessAccount = machine.Account{Name: "SYSTEM", Admin: true}

// RunHostProcess runs argv as an exec into a HostProcess container
// running as SYSTEM does on the node (package kubelet's exec): swdt-agent
// at a path it was uploaded to (argv: the path, "op", NAME), or the
// Kubernetes API transport's file script (filescript), whose Go twin this
// is; anything else is not recognized, as cmd.exe says. cut drops the
// exec stream (an AgentHold's Cut). It returns the exit status.
func (s *Server) RunHostProcess(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer, cut func()) int {
	switch {
	case len(argv) == 3 && argv[1] == "op" && ops.IsAgentPath(argv[0]):
		return s.runAgent(ctx, hostProcessAccount, argv[0], argv[2], stdin, stdout, stderr, cut)
	case filescript.IsArgv(argv):
		return s.fileCall(stdin, stdout, stderr)
	}
	io.Copy(io.Discard, stdin)
	notRecognized(stderr, argv)
	return 1
}

// notRecognized says, as cmd.exe does, that it knows no program argv[0].
func notRecognized(w io.Writer, argv []string) {
	word := ""
	if len(argv) > 0 {
		word = argv[0]
	}
	fmt.Fprintf(w, "'%s' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n", word)
}

// RunHostTerminal runs argv with a terminal as an exec with a TTY into a
// HostProcess container running as SYSTEM does (kubectl exec -it): cmd.exe
// is the look-alike of the SSH sessions' shell (shell.go), interactive or
// with /c and a command line, in the container's volume C:\hpc (a
// HostProcess container's working folder, when its image names none);
// anything else is not recognized, as cmd.exe says. tty's sizes are the
// terminal's. It returns the exit status.
func (s *Server) RunHostTerminal(ctx context.Context, argv []string, tty *kubelet.Terminal, stdin io.Reader, stdout io.Writer) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pty := &ptyState{width: 80, height: 24}
	go func() {
		for sz := range tty.Sizes {
			pty.set(sz.Width, sz.Height)
		}
	}()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	sh := &shell{n: s.node(hostProcessAccount), out: stdout, pty: pty, cwd: `C:\hpc`, in: feed(ctx, stdin)}
	cmd := len(argv) > 0 && (strings.EqualFold(argv[0], "cmd.exe") || strings.EqualFold(argv[0], "cmd"))
	switch {
	case cmd && len(argv) == 1:
		return sh.interactive(ctx)
	case cmd && len(argv) == 3 && strings.EqualFold(argv[1], "/c"):
		status, _ := sh.runLine(ctx, argv[2])
		return status
	}
	notRecognized(stdout, argv)
	return 1
}

// fileCall plays filescript's files.ps1 against the machine as SYSTEM.
func (s *Server) fileCall(stdin io.Reader, stdout, stderr io.Writer) int {
	n := s.node(hostProcessAccount)
	in := bufio.NewReader(stdin)
	line, err := in.ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return 1
	}
	reply := func(r filescript.Reply) int {
		b, _ := json.Marshal(r)
		if _, err := stdout.Write(append(b, '\n')); err != nil || !r.OK {
			return 1
		}
		return 0
	}
	fail := func(err error) int {
		kind := filescript.KindIO
		var fe *machine.FileError
		switch {
		case errors.As(err, &fe) && (fe.Code == machine.CodeFileNotFound || fe.Code == machine.CodePathNotFound), errors.Is(err, ntfs.ErrBadPath):
			kind = filescript.KindNotFound
		case errors.As(err, &fe) && fe.Code == machine.CodeAccessDenied:
			kind = filescript.KindAccessDenied
		}
		return reply(filescript.Reply{Kind: kind, Message: err.Error()})
	}
	var req filescript.Request
	if err := json.Unmarshal(line, &req); err != nil {
		return reply(filescript.Reply{Kind: filescript.KindBadRequest, Message: err.Error()})
	}
	entry := func(fi machine.FileInfo) filescript.Entry {
		size := fi.Size
		if fi.IsDir {
			size = 0
		}
		// NTFS keeps 100 ns steps.
		return filescript.Entry{Name: fi.Name, Dir: fi.IsDir, Size: size, Mod: fi.ModTime.UnixNano() / 100 * 100}
	}
	switch req.Op {
	case filescript.OpStat:
		fi, err := n.Stat(req.Path)
		if err != nil {
			return fail(err)
		}
		return reply(filescript.Reply{OK: true, Entries: []filescript.Entry{entry(fi)}})
	case filescript.OpReadDir:
		fis, err := n.List(req.Path)
		if err != nil {
			return fail(err)
		}
		out := []filescript.Entry{}
		for _, fi := range fis {
			out = append(out, entry(fi))
		}
		return reply(filescript.Reply{OK: true, Entries: out})
	case filescript.OpRemove:
		if err := n.Remove(req.Path); err != nil {
			return fail(err)
		}
		return reply(filescript.Reply{OK: true})
	case filescript.OpMkdir:
		if err := n.MkdirAll(req.Path); err != nil {
			return fail(err)
		}
		return reply(filescript.Reply{OK: true})
	case filescript.OpWrite:
		f, err := n.Create(req.Path)
		if err != nil {
			io.Copy(io.Discard, in)
			return fail(err)
		}
		_, err = io.Copy(f, in)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && req.To != "" {
			err = n.Rename(req.Path, req.To, true)
		}
		if err != nil {
			return fail(err)
		}
		return reply(filescript.Reply{OK: true})
	case filescript.OpRead:
		fi, err := n.Stat(req.Path)
		if err != nil {
			return fail(err)
		}
		f, err := n.OpenFile(req.Path)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		if _, err := f.Seek(req.Offset, io.SeekStart); err != nil {
			return fail(err)
		}
		if reply(filescript.Reply{OK: true, Entries: []filescript.Entry{entry(fi)}}) != 0 {
			return 1
		}
		if _, err := io.Copy(stdout, f); err != nil {
			// As PowerShell prints the exception that ends the script.
			fmt.Fprintf(stderr, "read %s: %v\r\n", req.Path, err)
			return 1
		}
		return 0
	}
	return reply(filescript.Reply{Kind: filescript.KindBadRequest, Message: "unknown file call " + strings.TrimSpace(req.Op)})
}
