package simnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

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

// program plays one program: args are the arguments after its path.
type program func(ctx context.Context, n *Node, path string, args []string, stdin []byte) (winos.Result, error)

// programs are the simulated programs by lower-case file name.
var programs = map[string]program{
	"hostname.exe": func(_ context.Context, n *Node, _ string, _ []string, _ []byte) (winos.Result, error) {
		return winos.Result{Stdout: []byte(n.Hostname() + "\r\n")}, nil
	},
	"whoami.exe": func(_ context.Context, n *Node, _ string, _ []string, _ []byte) (winos.Result, error) {
		return winos.Result{Stdout: []byte(strings.ToLower(n.Username()) + "\r\n")}, nil
	},
	"choco.exe": runChoco,
	"sc.exe":    runSC,
	"cmd.exe":   runCmd,
	// shutdown.exe /r restarts the machine (reboot.go).
	"shutdown.exe": runShutdown,
	// timeout.exe /t N waits N seconds, as Windows' does.
	"timeout.exe": func(ctx context.Context, n *Node, _ string, args []string, _ []byte) (winos.Result, error) {
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
func runCmd(_ context.Context, n *Node, _ string, args []string, _ []byte) (winos.Result, error) {
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
func runSC(_ context.Context, n *Node, _ string, args []string, _ []byte) (winos.Result, error) {
	if len(args) != 2 || !strings.EqualFold(args[0], "delete") {
		return winos.Result{ExitCode: 1639, Stdout: []byte("DESCRIPTION:\r\n        SC is a command line program used for communicating with the\r\n        Service Control Manager and services.\r\n")}, nil
	}
	err := n.DeleteService(args[1])
	var se *ServiceError
	switch {
	case err == nil:
		return winos.Result{Stdout: []byte("[SC] DeleteService SUCCESS\r\n")}, nil
	case errors.As(err, &se) && se.Code == CodeServiceDoesNotExist:
		return winos.Result{ExitCode: se.Code, Stdout: []byte(fmt.Sprintf("[SC] OpenService FAILED %d:\r\n\r\n%s\r\n\r\n", se.Code, se.Message))}, nil
	case errors.As(err, &se):
		return winos.Result{ExitCode: se.Code, Stdout: []byte(fmt.Sprintf("[SC] DeleteService FAILED %d:\r\n\r\n%s\r\n\r\n", se.Code, se.Message))}, nil
	}
	return winos.Result{}, err
}

// runProgram is winos.OS.Run on the simulated node.
func (n *Node) runProgram(ctx context.Context, cmd winos.Command) (winos.Result, error) {
	res, err := n.play(ctx, cmd)
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

// play finds the program cmd names and plays it.
func (n *Node) play(ctx context.Context, cmd winos.Command) (winos.Result, error) {
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
	if len(cmd.Args) > 0 && (strings.EqualFold(cmd.Args[0], "cli") || strings.EqualFold(cmd.Args[0], "srv")) {
		return n.runWinsProgram(ctx, exe, cmd.Args)
	}
	base := strings.ToLower(exe[strings.LastIndexAny(exe, `\/`)+1:])
	if p := programs[base]; p != nil {
		return p(ctx, n, exe, cmd.Args, cmd.Stdin)
	}
	return winos.Result{}, nil
}

// runWinsProgram plays a wins binary: what wins prints on failure goes to
// stderr (wins logs through logrus to stderr) with exit code 1.
func (n *Node) runWinsProgram(ctx context.Context, exe string, args []string) (winos.Result, error) {
	out, err := n.runWins(ctx, exe, args)
	if ctx.Err() != nil {
		return winos.Result{}, ctx.Err()
	}
	if err != nil {
		return winos.Result{ExitCode: 1, Stderr: []byte(err.Error() + "\r\n")}, nil
	}
	return winos.Result{Stdout: []byte(out)}, nil
}

// runChoco plays choco.exe: --version, list and install, with v1's and
// v2's differences in list.
func runChoco(_ context.Context, n *Node, _ string, args []string, _ []byte) (winos.Result, error) {
	c := n.Chocolatey()
	fail := func(format string, a ...any) (winos.Result, error) {
		return winos.Result{ExitCode: 1, Stdout: []byte(fmt.Sprintf(format, a...) + "\r\n")}, nil
	}
	if len(args) == 0 {
		return fail("Chocolatey v%s\r\nPlease run 'choco -?' or 'choco <command> -?' for help menu.", c.Version)
	}
	v2 := !strings.HasPrefix(c.Version, "0.") && !strings.HasPrefix(c.Version, "1.")
	switch strings.ToLower(args[0]) {
	case "--version", "-v":
		return winos.Result{Stdout: []byte(c.Version + "\r\n")}, nil
	case "list":
		local := hasFlag(args, "--local-only") || hasFlag(args, "-l") || hasFlag(args, "--lo")
		if v2 && local {
			return fail("Invalid argument --local-only. This argument has been removed from the list command and cannot be used.")
		}
		var lines []string
		if !v2 && !local {
			// v1's list queries the community feed.
			for name, pkg := range c.Catalog {
				lines = append(lines, name+"|"+pkg.Version)
			}
		} else {
			lines = n.ChocoList()
		}
		return winos.Result{Stdout: []byte(strings.Join(lines, "\r\n") + "\r\n")}, nil
	case "install":
		if len(args) < 2 {
			return fail("Package name is required. Please pass at least one package name to install.")
		}
		res, err := n.ChocoInstall(args[1])
		if err != nil {
			return winos.Result{}, err
		}
		out := res.Output
		if res.ExitCode != 0 && res.ExitCode != 1641 && res.ExitCode != 3010 {
			out = chocoFailureOutput(args[1], res.Output)
		}
		return winos.Result{ExitCode: res.ExitCode, Stdout: []byte(out + "\r\n")}, nil
	}
	return fail("Could not find a command registered that meets '%s'.", args[0])
}

// scriptPlay plays one fixed PowerShell script with its input.
type scriptPlay func(ctx context.Context, n *Node, input []byte) (winos.Result, error)

// scripts play the fixed PowerShell scripts by name; the Hyper-V ones are
// in hypervScripts (programs_hyperv.go).
var scripts = map[string]scriptPlay{
	winos.ScriptLanguageMode.Name(): func(_ context.Context, n *Node, _ []byte) (winos.Result, error) {
		return winos.Result{Stdout: []byte(n.LanguageMode() + "\r\n")}, nil
	},
	winos.ScriptChocoInstall.Name(): playChocoInstall,
	winos.ScriptFirewallRules.Name(): func(ctx context.Context, n *Node, input []byte) (winos.Result, error) {
		var req struct{ Names []string }
		if err := json.Unmarshal(input, &req); err != nil {
			return scriptError(err)
		}
		type rule struct {
			Name    string `json:"name"`
			Exists  bool   `json:"exists"`
			Enabled bool   `json:"enabled"`
		}
		out := []rule{}
		for _, name := range req.Names {
			r, ok := n.FirewallRule(name)
			out = append(out, rule{Name: name, Exists: ok, Enabled: ok && r.Enabled})
		}
		raw, _ := json.Marshal(out)
		return winos.Result{Stdout: append(raw, '\r', '\n')}, nil
	},
	winos.ScriptFirewallSet.Name(): func(ctx context.Context, n *Node, input []byte) (winos.Result, error) {
		var req struct {
			Names   []string
			Enabled bool
		}
		if err := json.Unmarshal(input, &req); err != nil {
			return scriptError(err)
		}
		if err := n.OS().SetFirewallRules(ctx, req.Names, req.Enabled); err != nil {
			return winos.Result{ExitCode: 1, Stderr: []byte(err.Error() + "\r\n")}, nil
		}
		return winos.Result{}, nil
	},
	winos.ScriptServiceEvents.Name(): func(ctx context.Context, n *Node, input []byte) (winos.Result, error) {
		var req struct {
			Names []string
			Since time.Time
			Max   int
		}
		if err := json.Unmarshal(input, &req); err != nil {
			return scriptError(err)
		}
		lines := []string{}
		for _, name := range req.Names {
			if _, err := n.Service(name); err == nil {
				got, _ := n.OS().ServiceEvents(ctx, name, req.Since, req.Max)
				lines = append(lines, got...)
				break
			}
		}
		raw, _ := json.Marshal(lines)
		return winos.Result{Stdout: append(raw, '\r', '\n')}, nil
	},
}

// scriptError is how powershell.exe ends a script whose input it could not
// read: exit 1, the error on stderr.
func scriptError(err error) (winos.Result, error) {
	return winos.Result{ExitCode: 1, Stderr: []byte("ConvertFrom-Json : " + err.Error() + "\r\n")}, nil
}

// runScript is winos.OS.RunScript on the simulated node.
func (n *Node) runScript(ctx context.Context, s winos.Script, input []byte) (winos.Result, error) {
	if err := ctx.Err(); err != nil {
		return winos.Result{}, err
	}
	play := scripts[s.Name()]
	if play == nil {
		play = hypervScripts[s.Name()]
	}
	if play == nil {
		return winos.Result{}, fmt.Errorf("simnode does not simulate script %s", s.Name())
	}
	if res, refused := n.constrainedScript(s); refused {
		return res, nil
	}
	return play(ctx, n, input)
}

func itoa(i int) string { return strconv.Itoa(i) }

// chocoSource is the feed choco names in its failure output.
const chocoSource = "https://community.chocolatey.org/api/v2/"

// chocoFailureOutput is what choco v2 prints with --limit-output when an
// install fails: the reason, the sources and the summary.
func chocoFailureOutput(name, reason string) string {
	return strings.Join([]string{
		reason,
		fmt.Sprintf(" Source(s): '%s'", chocoSource),
		"",
		"Chocolatey installed 0/1 packages. 1 packages failed.",
		" See the log for details (C:\\ProgramData\\chocolatey\\logs\\chocolatey.log).",
		"",
		"Failures",
		fmt.Sprintf(" - %s - %s", name, reason),
	}, "\r\n")
}
