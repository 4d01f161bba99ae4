package programs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/swdt/pkg/simnode/programs/choco"
	"sigs.k8s.io/swdt/pkg/simnode/programs/hyperv"
	"sigs.k8s.io/swdt/pkg/simnode/programs/wins"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The programs and fixed scripts of the simulated Windows layer. simnode
// runs no program: a command line given to a known program (hostname.exe,
// whoami.exe, choco.exe, a wins binary) is answered from the state model,
// and any other existing executable "runs" and exits 0 without output, as
// a health-check command that works would. A missing executable cannot be
// started, as on Windows.

// system32 is where a bare program name is found.
const system32 = `C:\Windows\System32\`

// A Program is one simulated program swdt drives: the executables it
// answers and the fixed PowerShell scripts (pkg/winos/scripts) that drive
// it. It changes the machine only through the model's API (machine.Node).
type Program interface {
	// Claims reports whether a run of the existing file exe with args is
	// the program's.
	Claims(exe string, args []string) bool
	// Run plays it: args are the arguments after exe's path.
	Run(ctx context.Context, n *machine.Node, exe string, args []string, stdin []byte) (winos.Result, error)
	// Script returns the play of the fixed script name, nil when the
	// script is not the program's.
	Script(name string) func(ctx context.Context, n *machine.Node, input []byte) (winos.Result, error)
}

// all are the simulated programs, in the order they are asked: wins
// claims any file run with its subcommands.
var all = []Program{wins.Program{}, choco.Program{}, hyperv.Program{}, builtins{}}

// Script returns the play of the fixed script name, or nil.
func Script(name string) func(ctx context.Context, n *machine.Node, input []byte) (winos.Result, error) {
	for _, p := range all {
		if play := p.Script(name); play != nil {
			return play
		}
	}
	return nil
}

// builtins are Windows' own small programs.
type builtins struct{}

func (builtins) Claims(exe string, _ []string) bool {
	return builtin[strings.ToLower(winpath.Base(exe))] != nil
}

func (builtins) Run(ctx context.Context, n *machine.Node, exe string, args []string, stdin []byte) (winos.Result, error) {
	return builtin[strings.ToLower(winpath.Base(exe))](ctx, n, exe, args, stdin)
}

func (builtins) Script(string) func(ctx context.Context, n *machine.Node, input []byte) (winos.Result, error) {
	return nil
}

// program plays one program: args are the arguments after its path.
type program func(ctx context.Context, n *machine.Node, path string, args []string, stdin []byte) (winos.Result, error)

// builtin are Windows' programs by lower-case file name.
var builtin = map[string]program{
	"hostname.exe": func(_ context.Context, n *machine.Node, _ string, _ []string, _ []byte) (winos.Result, error) {
		return winos.Result{Stdout: []byte(n.Hostname() + "\r\n")}, nil
	},
	"whoami.exe": func(_ context.Context, n *machine.Node, _ string, _ []string, _ []byte) (winos.Result, error) {
		return winos.Result{Stdout: []byte(strings.ToLower(n.Username()) + "\r\n")}, nil
	},
	"sc.exe":  runSC,
	"cmd.exe": runCmd,
	// shutdown.exe /r restarts the machine (machine/reboot.go).
	"shutdown.exe": runShutdown,
	// timeout.exe /t N waits N seconds, as Windows' does.
	"timeout.exe": func(ctx context.Context, n *machine.Node, _ string, args []string, _ []byte) (winos.Result, error) {
		secs := 0
		if len(args) >= 2 && strings.EqualFold(args[0], "/t") {
			secs, _ = strconv.Atoi(args[1])
		}
		if err := n.Sleep(ctx, time.Duration(secs)*time.Second); err != nil {
			return winos.Result{}, err
		}
		return winos.Result{}, nil
	},
}

// runCmd plays the few `cmd.exe /c` commands a user runs through swdt
// exec: echo (each argument as given, separated by spaces), type FILE
// and exit /b N. As cmd.exe, it reports a missing file on stderr.
func runCmd(_ context.Context, n *machine.Node, _ string, args []string, _ []byte) (winos.Result, error) {
	if len(args) < 2 || !strings.EqualFold(args[0], "/c") {
		return winos.Result{ExitCode: 1, Stderr: []byte("simnode's cmd.exe runs only /c echo, /c type FILE and /c exit /b N\r\n")}, nil
	}
	verb, rest := strings.ToLower(args[1]), args[2:]
	switch {
	case verb == "echo":
		return winos.Result{Stdout: []byte(strings.Join(rest, " ") + "\r\n")}, nil
	case verb == "type" && len(rest) == 1:
		data, err := n.ReadFile(rest[0])
		if err != nil {
			return winos.Result{ExitCode: 1, Stderr: []byte("The system cannot find the file specified.\r\n")}, nil
		}
		return winos.Result{Stdout: data}, nil
	case verb == "exit" && len(rest) == 2 && strings.EqualFold(rest[0], "/b"):
		code, err := strconv.Atoi(rest[1])
		if err != nil {
			return winos.Result{}, nil
		}
		return winos.Result{ExitCode: code}, nil
	}
	return winos.Result{ExitCode: 1, Stderr: []byte("'" + args[1] + "' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n")}, nil
}

// runSC plays `sc.exe delete NAME`, the one sc.exe command the agent
// runs. Like sc.exe it exits with the Win32 error code.
func runSC(_ context.Context, n *machine.Node, _ string, args []string, _ []byte) (winos.Result, error) {
	if len(args) != 2 || !strings.EqualFold(args[0], "delete") {
		return winos.Result{ExitCode: 1639, Stdout: []byte("DESCRIPTION:\r\n        SC is a command line program used for communicating with the\r\n        Service Control Manager and services.\r\n")}, nil
	}
	err := n.DeleteService(args[1])
	var se *machine.ServiceError
	switch {
	case err == nil:
		return winos.Result{Stdout: []byte("[SC] DeleteService SUCCESS\r\n")}, nil
	case errors.As(err, &se) && se.Code == machine.CodeServiceDoesNotExist:
		return winos.Result{ExitCode: se.Code, Stdout: []byte(fmt.Sprintf("[SC] OpenService FAILED %d:\r\n\r\n%s\r\n\r\n", se.Code, se.Message))}, nil
	case errors.As(err, &se):
		return winos.Result{ExitCode: se.Code, Stdout: []byte(fmt.Sprintf("[SC] DeleteService FAILED %d:\r\n\r\n%s\r\n\r\n", se.Code, se.Message))}, nil
	}
	return winos.Result{}, err
}

// Run is winos.OS.Run on the simulated node: Play, with the output
// written to the command's writers.
func Run(ctx context.Context, n *machine.Node, cmd winos.Command) (winos.Result, error) {
	res, err := Play(ctx, n, cmd)
	if err != nil {
		return res, err
	}
	// The simulated program prints everything at once, when it ends.
	if cmd.Stdout != nil {
		if _, err := cmd.Stdout.Write(res.Stdout); err != nil {
			return res, err
		}
		res.Stdout = nil
	}
	if cmd.Stderr != nil {
		if _, err := cmd.Stderr.Write(res.Stderr); err != nil {
			return res, err
		}
		res.Stderr = nil
	}
	return res, nil
}

// searchPath is the simulated node's PATH, where a command the user typed
// is looked up (winos.Command.SearchPath).
var searchPath = []string{system32, `C:\Windows\`, `C:\ProgramData\chocolatey\bin\`, `C:\k\`}

// Play finds the program cmd names and plays it.
func Play(ctx context.Context, n *machine.Node, cmd winos.Command) (winos.Result, error) {
	if err := ctx.Err(); err != nil {
		return winos.Result{}, err
	}
	exe := cmd.Path
	if !strings.ContainsAny(exe, `\/:`) {
		dirs := []string{system32}
		if cmd.SearchPath {
			dirs = searchPath
		}
		exe = dirs[0] + cmd.Path
	lookup:
		for _, d := range dirs {
			for _, name := range []string{cmd.Path, cmd.Path + ".exe"} {
				if fi, err := n.Stat(d + name); err == nil && !fi.IsDir {
					exe = d + name
					break lookup
				}
			}
		}
	}
	if fi, err := n.Stat(exe); err != nil || fi.IsDir {
		return winos.Result{}, &winos.Error{Op: "start process", Target: exe, Code: winos.ErrFileNotFound,
			Message: "The system cannot find the file specified."}
	}
	for _, p := range all {
		if p.Claims(exe, cmd.Args) {
			return p.Run(ctx, n, exe, cmd.Args, cmd.Stdin)
		}
	}
	return winos.Result{}, nil
}

// runShutdown plays shutdown.exe: /r [/t N] restarts the machine; other
// uses are refused as the real one refuses a missing /r, /s or /a.
func runShutdown(_ context.Context, n *machine.Node, _ string, args []string, _ []byte) (winos.Result, error) {
	restart, delay := false, 30*time.Second // Windows' default /t
	for i := 0; i < len(args); i++ {
		switch strings.ToLower(args[i]) {
		case "/r":
			restart = true
		case "/t":
			if i+1 < len(args) {
				s, err := strconv.Atoi(args[i+1])
				if err != nil || s < 0 || s > 315360000 {
					return winos.Result{ExitCode: 87, Stderr: []byte("The parameter is incorrect.(87)\r\n")}, nil
				}
				delay = time.Duration(s) * time.Second
				i++
			}
		}
	}
	if !restart {
		return winos.Result{ExitCode: 1, Stderr: []byte("simnode's shutdown.exe only restarts (/r)\r\n")}, nil
	}
	n.ScheduleRestart(delay)
	return winos.Result{}, nil
}
