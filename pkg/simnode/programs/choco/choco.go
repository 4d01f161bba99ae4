package choco

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/swdt/pkg/winos"
)

// Program is the simulated Chocolatey: choco.exe (--version, list,
// install) and the community install script (choco-install.ps1), over
// the Chocolatey part of the machine's state.
type Program struct{}

// Claims reports whether exe is choco.exe.
func (Program) Claims(exe string, _ []string) bool {
	return strings.EqualFold(winpath.Base(exe), "choco.exe")
}

// Run plays choco.exe.
func (Program) Run(ctx context.Context, n *machine.Node, exe string, args []string, stdin []byte) (winos.Result, error) {
	return runChoco(ctx, n, exe, args, stdin)
}

// Script returns the play of the install script, nil for any other.
func (Program) Script(name string) func(ctx context.Context, n *machine.Node, input []byte) (winos.Result, error) {
	if name == winos.ScriptChocoInstall.Name() {
		return playChocoInstall
	}
	return nil
}

// runChoco plays choco.exe: --version, list and install, with v1's and
// v2's differences in list.
func runChoco(_ context.Context, n *machine.Node, _ string, args []string, _ []byte) (winos.Result, error) {
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

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if strings.EqualFold(a, flag) {
			return true
		}
	}
	return false
}

// Exit codes of the fixed choco-install script (pkg/winos/scripts).
const (
	chocoScriptDownloadFailed = 2
	chocoScriptInstallerThrew = 3
)

// playChocoInstall plays scripts/choco-install.ps1 running Chocolatey's
// community installer: what it prints on stdout (Write-Host) and stderr,
// and its exit code: 2 when the download fails, 3 when the installer
// throws (Chocolatey 2 after installing .NET Framework 4.8, or for an
// account that is not an administrator), else 0.
func playChocoInstall(_ context.Context, n *machine.Node, _ []byte) (winos.Result, error) {
	version := n.Chocolatey().InstallVersion
	if version == "" {
		version = "2.2.2"
	}
	progress := []string{
		"Forcing web requests to allow TLS v1.2 (Required for requests to Chocolatey.org)",
		"Getting Chocolatey from https://community.chocolatey.org/api/v2/package/chocolatey/" + version + ".",
		"Downloading https://community.chocolatey.org/api/v2/package/chocolatey/" + version + " to C:\\Users\\Administrator\\AppData\\Local\\Temp\\chocolatey\\chocoInstall\\chocolatey.zip",
		"Extracting C:\\Users\\Administrator\\AppData\\Local\\Temp\\chocolatey\\chocoInstall\\chocolatey.zip to C:\\Users\\Administrator\\AppData\\Local\\Temp\\chocolatey\\chocoInstall",
		"Installing Chocolatey on the local machine",
	}
	err := n.InstallChocolatey()
	var f *machine.OpFailure
	switch {
	case err == nil:
		out := append(progress, "Chocolatey (choco.exe) is now ready.",
			"You can call choco from anywhere, command line or powershell by typing choco.")
		return winos.Result{Stdout: []byte(strings.Join(out, "\r\n") + "\r\n")}, nil
	case errors.As(err, &f) && f.Kind == ops.KindDownload:
		return winos.Result{ExitCode: chocoScriptDownloadFailed, Stderr: []byte(f.Message + "\r\n")}, nil
	case errors.As(err, &f):
		out := progress
		if f.Kind == ops.KindRebootRequired {
			out = append(out, "The registry key for .Net 4.8 was not found or this is forced",
				"Downloading 'https://download.visualstudio.microsoft.com/download/pr/2d6bb6b2-226a-4baa-bdec-798822606ff1/8494001c276a4b96804cde7829c04d7f/ndp48-x86-x64-allos-enu.exe' to 'C:\\Users\\Administrator\\AppData\\Local\\Temp\\chocolatey\\ndp48-x86-x64-allos-enu.exe' - the installer is 100+ MBs, so this could take a while on a slow connection.",
				"Installing 'C:\\Users\\Administrator\\AppData\\Local\\Temp\\chocolatey\\ndp48-x86-x64-allos-enu.exe' - this may take a while with no output.")
		}
		return winos.Result{ExitCode: chocoScriptInstallerThrew, Stdout: []byte(strings.Join(out, "\r\n") + "\r\n"),
			Stderr: []byte(strings.ReplaceAll(f.Message, "\n", "\r\n") + "\r\n")}, nil
	}
	return winos.Result{}, err
}
