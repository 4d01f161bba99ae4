package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// chocoExe is choco.exe by full path: sessions keep sshd's PATH from
// before the install, and bin\choco.exe is only a shim.
const chocoExe = `C:\ProgramData\chocolatey\choco.exe`

// chocoScriptURL is where the fixed choco-install script downloads
// Chocolatey's community install script from.
const chocoScriptURL = "https://community.chocolatey.org/install.ps1"

// Exit codes of the fixed choco-install script (scripts/choco-install.ps1).
// 0 means the installer ran to its end; whether it worked is judged by
// choco.exe existing and answering.
const (
	chocoScriptDownloadFailed = 2
	chocoScriptInstallerThrew = 3
)

// .NET Framework 4.x's release number is the Release value of netFxKey;
// Chocolatey 2 needs 4.8 (release 528040 or later).
const (
	netFxKey       = `SOFTWARE\Microsoft\NET Framework Setup\NDP\v4\Full`
	netFx48Release = 528040
)

// chocoIDRE is a NuGet/Chocolatey package id (as the config validates it,
// of at most chocoIDMax bytes, checked apart: a {0,99} would compile into a
// hundred states at every start of the agent): it cannot start with '-',
// so choco never takes it for an option.
var chocoIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// chocoIDMax is the longest package id.
const chocoIDMax = 100

// chocoNotFoundRE matches choco's ways of saying a package is not on the
// feed.
var chocoNotFoundRE = regexp.MustCompile(`(?i)not found with the source|was not found|could not be found`)

// chocoRebootRE matches Chocolatey's installer saying it needs a reboot
// (".NET Framework 4.8 was installed, but a reboot is required", "A reboot
// is required"). It throws a plain string, so its text is the only signal.
var chocoRebootRE = regexp.MustCompile(`(?i)reboot`)

// chocoDir is Chocolatey's folder, where choco.exe runs from.
const chocoDir = `C:\ProgramData\chocolatey`

// chocoTrusted refuses a choco.exe an ordinary user could have put there:
// C:\ProgramData lets Users create folders, and swdt runs choco.exe
// elevated (and skips Chocolatey's install when it exists). The folder
// and the program must belong to Administrators, SYSTEM or the agent's
// own account and, on a system that keeps security descriptors (not
// Wine: the agent's own folder tells), let nobody else change them.
func chocoTrusted(w winos.OS) error {
	kept, err := footprintKept(w)
	if err != nil {
		return err
	}
	for _, p := range []string{chocoDir, chocoExe} {
		owner, ok, err := adminsOwn(w, p)
		if err != nil {
			return err
		}
		why := ""
		if !ok {
			why = "is owned by " + owner + ", not by Administrators or SYSTEM"
		} else if kept {
			acl, err := w.ACL(p)
			if err != nil {
				return fmt.Errorf("read the ACL of %s: %w", p, err)
			}
			if !onlyAdminsWrite(acl) {
				why = "lets accounts other than Administrators and SYSTEM change it"
			}
		}
		if why != "" {
			return Fail(ops.KindUnsafeFolder, "%s %s: an ordinary user may have put Chocolatey there, and swdt would run it as an administrator; "+
				"nothing was run: as an administrator, delete %s (or give it to Administrators, writable by them and SYSTEM only) and run swdt setup again",
				p, why, chocoDir)
		}
	}
	return nil
}

// chocoInstalled reports whether choco.exe exists.
func chocoInstalled(w winos.OS) (bool, error) {
	fi, err := w.Stat(chocoExe)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look for %s: %w", chocoExe, err)
	}
	return !fi.IsDir, nil
}

// chocoAsk runs a quick choco.exe command (version, list) under the query
// time limit.
func chocoAsk(ctx context.Context, w winos.OS, args ...string) (winos.Result, error) {
	res, expired, err := runBounded(ctx, w, setupLimits.query, winos.Command{Path: chocoExe, Args: args})
	if err != nil {
		return res, fmt.Errorf("run choco %s: %w", strings.Join(args, " "), err)
	}
	if expired {
		return res, Fail(ops.KindTimeout, "`choco %s` did not answer within %s", strings.Join(args, " "), setupLimits.query)
	}
	return res, nil
}

// chocoVersion asks choco.exe its version; ok is false when it did not
// answer with exit code 0.
func chocoVersion(ctx context.Context, w winos.OS) (version string, res winos.Result, ok bool, err error) {
	res, err = chocoAsk(ctx, w, "--version")
	if err != nil || res.ExitCode != 0 {
		return "", res, false, err
	}
	return chocoFirstLine(string(res.Stdout)), res, true, nil
}

// chocoV1 reports whether version is Chocolatey 0.x or 1.x, whose `list`
// searches the feed unless given --local-only (which v2 rejects).
func chocoV1(version string) bool {
	return strings.HasPrefix(version, "0.") || strings.HasPrefix(version, "1.")
}

// chocoList lists installed packages (`choco list --limit-output`), only
// those named exactly when name is set. It returns nil when choco fails.
func chocoList(ctx context.Context, w winos.OS, v1 bool, name string) ([]ops.ChocoPackage, error) {
	args := []string{"list", "--limit-output"}
	if v1 {
		args = append(args, "--local-only")
	}
	if name != "" {
		args = append(args, "--exact", name)
	}
	res, err := chocoAsk(ctx, w, args...)
	if err != nil || res.ExitCode != 0 {
		return nil, err
	}
	pkgs := []ops.ChocoPackage{}
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		parts := strings.Split(strings.TrimSpace(line), "|")
		if len(parts) == 2 && parts[0] != "" {
			pkgs = append(pkgs, ops.ChocoPackage{Name: parts[0], Version: parts[1]})
		}
	}
	return pkgs, nil
}

// chocoState is Chocolatey's version and packages, for setup-facts. A
// choco.exe that does not answer leaves them empty: the facts must still
// arrive.
func chocoState(ctx context.Context, w winos.OS) (ops.ChocoState, error) {
	st := ops.ChocoState{Packages: []ops.ChocoPackage{}}
	installed, err := chocoInstalled(w)
	if err != nil || !installed {
		return st, err
	}
	st.Installed = true
	if err := chocoTrusted(w); err != nil {
		// Never run it; the install and the packages say why.
		return st, nil
	}
	version, _, ok, err := chocoVersion(ctx, w)
	if err != nil || !ok {
		return st, err
	}
	st.Version = version
	pkgs, err := chocoList(ctx, w, chocoV1(version), "")
	if err != nil {
		return st, err
	}
	if pkgs != nil {
		st.Packages = pkgs
	}
	return st, nil
}

// chocoInstall installs Chocolatey with its community install script,
// unless choco.exe exists. It refuses up front under Constrained Language
// mode, and tells a download failure, a needed reboot and a failed install
// apart.
func chocoInstall(ctx context.Context, w winos.OS, _ ops.ChocoInstallRequest) (ops.ChocoState, error) {
	installed, err := chocoInstalled(w)
	if err != nil {
		return ops.ChocoState{}, err
	}
	var out string
	if !installed {
		if err := chocoCheckLanguageMode(ctx, w); err != nil {
			return ops.ChocoState{}, err
		}
		if out, err = chocoRunInstaller(ctx, w); err != nil {
			return ops.ChocoState{}, err
		}
	}
	if err := chocoTrusted(w); err != nil {
		return ops.ChocoState{}, err
	}
	version, res, ok, err := chocoVersion(ctx, w)
	if err != nil {
		return ops.ChocoState{}, err
	}
	if !ok {
		if chocoRebootRE.MatchString(out) {
			return ops.ChocoState{}, chocoRebootRequired(w, out)
		}
		return ops.ChocoState{}, Fail(ops.KindInstallFailed, "%s exists but `choco --version` failed with exit code %d: %s",
			chocoExe, res.ExitCode, lastBytes(printed(res), 800))
	}
	return ops.ChocoState{Installed: true, Version: version, Packages: []ops.ChocoPackage{}}, nil
}

// chocoCheckLanguageMode fails when PowerShell runs in any language mode
// but FullLanguage: under a WDAC or AppLocker policy Chocolatey's install
// script cannot run, and would fail in ways that do not say why.
func chocoCheckLanguageMode(ctx context.Context, w winos.OS) error {
	return requireFullLanguage(ctx, w, "Chocolatey's install script cannot run in it (or install Chocolatey by other means so that "+chocoExe+" exists)")
}

// chocoRunInstaller runs the fixed choco-install script and returns its
// output when choco.exe exists afterwards.
func chocoRunInstaller(ctx context.Context, w winos.OS) (string, error) {
	res, expired, err := scriptBounded(ctx, w, setupLimits.chocoSetup, winos.ScriptChocoInstall, nil)
	if err != nil {
		return "", fmt.Errorf("run Chocolatey's install script: %w", err)
	}
	if expired {
		return "", Fail(ops.KindTimeout, "Chocolatey's install script did not finish within %s and was stopped (a slow download? "+
			"it may install .NET Framework 4.8 first, 100+ MB); run swdt setup again", setupLimits.chocoSetup)
	}
	out := printed(res)
	if res.ExitCode == chocoScriptDownloadFailed {
		return "", Fail(ops.KindDownloadFailed, "the node could not download the Chocolatey install script from %s: %s "+
			"(does the node have internet access or a proxy?)", chocoScriptURL, chocoLastLine(string(res.Stderr)))
	}
	installed, err := chocoInstalled(w)
	if err != nil {
		return "", err
	}
	if installed {
		return out, nil
	}
	if chocoRebootRE.MatchString(out) {
		return "", chocoRebootRequired(w, out)
	}
	if res.ExitCode == chocoScriptInstallerThrew {
		return "", Fail(ops.KindInstallFailed, "Chocolatey's installer stopped with an error and %s does not exist: %s",
			chocoExe, lastBytes(out, 1500))
	}
	return "", Fail(ops.KindInstallFailed, "the Chocolatey install script ran (exit code %d) but %s does not exist: %s",
		res.ExitCode, chocoExe, lastBytes(out, 1500))
}

// chocoRebootRequired is the reboot-required failure, naming the .NET
// Framework the node has when that explains it.
func chocoRebootRequired(w winos.OS, out string) error {
	why := "Chocolatey's installer stopped because the node must reboot first"
	if rel, ok, err := setupRegistry(w, netFxKey, "Release"); err == nil && (!ok || rel.Number < netFx48Release) {
		why += fmt.Sprintf(": Chocolatey 2 needs .NET Framework 4.8, which the installer has just installed (this node ran %s until now)",
			netFxName(rel.Number, ok))
	}
	return Fail(ops.KindRebootRequired, "%s. Reboot the node (swdt reboot NODE --wait, or Restart-Computer on it), then run swdt setup again: the next run "+
		"completes the install. The installer said: %s", why, lastBytes(out, 400))
}

// netFxName names a .NET Framework 4.x release number.
func netFxName(release uint64, ok bool) string {
	switch {
	case !ok:
		return "no .NET Framework 4"
	case release >= netFx48Release:
		return ".NET Framework 4.8"
	case release >= 461808:
		return ".NET Framework 4.7.2"
	case release >= 461308:
		return ".NET Framework 4.7.1"
	case release >= 460798:
		return ".NET Framework 4.7"
	}
	return fmt.Sprintf(".NET Framework 4 release %d (older than 4.7)", release)
}

// chocoPackages installs each package with `choco install`, one result per
// package; one failing does not stop the others.
func chocoPackages(ctx context.Context, w winos.OS, req ops.ChocoPackagesRequest) (ops.ChocoPackagesResponse, error) {
	resp := ops.ChocoPackagesResponse{Results: []ops.ChocoPackageResult{}}
	for _, name := range req.Packages {
		if len(name) > chocoIDMax || !chocoIDRE.MatchString(name) {
			return resp, Fail(ops.KindBadRequest, "%q is not a Chocolatey package id (letters, digits, '.', '_' and '-', starting with "+
				"a letter or digit); nothing was installed", name)
		}
	}
	installed, err := chocoInstalled(w)
	if err != nil {
		return resp, err
	}
	if !installed {
		return resp, Fail(ops.KindNotFound, "Chocolatey is not installed (%s is missing)", chocoExe)
	}
	if err := chocoTrusted(w); err != nil {
		return resp, err
	}
	version, res, ok, err := chocoVersion(ctx, w)
	if err != nil {
		return resp, err
	}
	if !ok {
		return resp, Fail(ops.KindInstallFailed, "`choco --version` failed with exit code %d, so Chocolatey cannot install packages: %s",
			res.ExitCode, lastBytes(printed(res), 800))
	}
	for _, name := range req.Packages {
		r, err := chocoInstallPackage(ctx, w, name, chocoV1(version))
		if err != nil {
			return resp, err
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

// chocoInstallPackage runs `choco install NAME` under its time limit.
// Exit codes 0, 1641 and 3010 are success; the last two mean a reboot is
// needed.
func chocoInstallPackage(ctx context.Context, w winos.OS, name string, v1 bool) (ops.ChocoPackageResult, error) {
	r := ops.ChocoPackageResult{Name: name, Result: ops.PackageFailed}
	res, expired, err := runBounded(ctx, w, setupLimits.chocoPackage,
		winos.Command{Path: chocoExe, Args: []string{"install", name, "-y", "--no-progress", "--limit-output"}})
	if err != nil {
		return r, fmt.Errorf("run choco install %s: %w", name, err)
	}
	if expired {
		r.ExitCode = -1
		r.Output = fmt.Sprintf("choco install %s did not finish within %s and was stopped", name, setupLimits.chocoPackage)
		return r, nil
	}
	r.ExitCode = res.ExitCode
	switch res.ExitCode {
	case 0, 1641, 3010:
		r.Result = ops.PackageInstalled
		r.RebootRequired = res.ExitCode != 0
		// The install worked: a list that fails or hangs only leaves the
		// version unknown, and must not lose the results so far.
		pkgs, _ := chocoList(ctx, w, v1, name)
		for _, p := range pkgs {
			if strings.EqualFold(p.Name, name) {
				r.Version = p.Version
			}
		}
	default:
		out := printed(res)
		if chocoNotFoundRE.MatchString(out) {
			r.Result = ops.PackageNotFound
		}
		r.Output = lastBytes(out, 800)
	}
	return r, nil
}

// chocoFirstLine is the first non-empty line of s, trimmed.
func chocoFirstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}

// chocoLastLine is the last non-empty line of s, trimmed.
func chocoLastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
