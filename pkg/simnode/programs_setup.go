package simnode

import (
	"bytes"
	"context"
	"errors"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

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
func playChocoInstall(_ context.Context, n *Node, _ []byte) (winos.Result, error) {
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
	var f *OpFailure
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

// SSHDAdminKeys returns the keys sshd (Win32-OpenSSH) would accept from
// administrators_authorized_keys for the node's account: none when the
// file is missing, grants access beyond Administrators and SYSTEM, has an
// owner sshd refuses (sshdAcceptsOwner), or holds NUL bytes (UTF-16,
// which sshd reads as garbage without a word in its log). Lines are taken
// byte for byte, so a byte order mark spoils the line it starts.
func (n *Node) SSHDAdminKeys() []string {
	raw, err := n.ReadFile(PathAdminAuthorizedKeys)
	if err != nil || bytes.IndexByte(raw, 0) >= 0 {
		return nil
	}
	if acl, err := n.ACL(PathAdminAuthorizedKeys); err != nil || !AdminOnlyACL(acl) || !n.sshdAcceptsOwner(PathAdminAuthorizedKeys, n.account.Name) {
		return nil
	}
	var keys []string
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		fields := strings.Fields(line)
		if len(fields) >= 2 && (strings.HasPrefix(fields[0], "ssh-") || strings.HasPrefix(fields[0], "ecdsa-")) {
			keys = append(keys, line)
		}
	}
	return keys
}

// sshdAcceptsOwner reports whether sshd (Win32-OpenSSH's
// check_secure_file_permission) accepts the owner of a key file read for
// user: Administrators, SYSTEM, TrustedInstaller or user itself. Any other
// owner may rewrite the file's DACL at will, so sshd refuses the file
// ("Bad owner on ...") and key authentication falls through.
func (n *Node) sshdAcceptsOwner(p, user string) bool {
	owner, err := n.Owner(p)
	if err != nil {
		return false
	}
	switch strings.ToLower(owner) {
	case strings.ToLower(AccountAdministrators), strings.ToLower(AccountSystem), `nt service\trustedinstaller`:
		return true
	}
	o, u := strings.ToLower(owner), strings.ToLower(user)
	return o == u || strings.HasSuffix(o, `\`+u)
}
