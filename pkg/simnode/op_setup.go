package simnode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

// chocoInstallScriptURL is where the community install script comes from.
const chocoInstallScriptURL = "https://community.chocolatey.org/install.ps1"

// chocoSource is the feed choco names in its "not found" output.
const chocoSource = "https://community.chocolatey.org/api/v2/"

// adminOnlyACL is what icacls /inheritance:r /grant *S-1-5-32-544:F
// /grant *S-1-5-18:F (followed by removing other grants) leaves.
func adminOnlyACL() *ACL {
	return &ACL{InheritanceDisabled: true, Entries: []ACE{
		{Identity: `BUILTIN\Administrators`, Rights: "F"},
		{Identity: `NT AUTHORITY\SYSTEM`, Rights: "F"},
	}}
}

func opSetupFacts(ctx context.Context, n *Node, req ops.SetupFactsRequest) (ops.SetupFactsResponse, error) {
	facts, err := opNodeFacts(ctx, n, ops.NodeFactsRequest{})
	if err != nil {
		return ops.SetupFactsResponse{}, err
	}
	resp := ops.SetupFactsResponse{
		Node:           facts,
		RDP:            rdpState(n, req.FirewallRules),
		Choco:          chocoState(n),
		AuthorizedKeys: ops.AuthorizedKeysState{Keys: []string{}},
	}
	// As in the op: only an administrator may read the file.
	if n.IsAdmin() {
		resp.AuthorizedKeys, err = authorizedKeysState(n)
		if err != nil {
			return ops.SetupFactsResponse{}, err
		}
	}
	return resp, nil
}

// rdpState reads fDenyTSConnections, UserAuthentication and the named
// firewall rules.
func rdpState(n *Node, rules []string) ops.RDPState {
	deny, _ := n.RegistryValue(KeyTerminalServer, "fDenyTSConnections")
	nla, _ := n.RegistryValue(KeyRDPTcp, "UserAuthentication")
	st := ops.RDPState{Enabled: deny.Number == 0, NLA: nla.Number == 1, FirewallRules: []ops.FirewallRule{}}
	for _, name := range rules {
		r, ok := n.FirewallRule(name)
		st.FirewallRules = append(st.FirewallRules, ops.FirewallRule{Name: name, Exists: ok, Enabled: ok && r.Enabled})
	}
	return st
}

// chocoState is what `choco --version` and `choco list --limit-output`
// report; the list includes chocolatey itself, as choco's does.
func chocoState(n *Node) ops.ChocoState {
	c := n.Chocolatey()
	st := ops.ChocoState{Installed: c.Installed, Packages: []ops.ChocoPackage{}}
	if !c.Installed {
		return st
	}
	st.Version = c.Version
	for _, line := range n.ChocoList() {
		name, version, ok := strings.Cut(line, "|")
		if ok {
			st.Packages = append(st.Packages, ops.ChocoPackage{Name: name, Version: version})
		}
	}
	return st
}

// authorizedKeysState reads administrators_authorized_keys: its
// non-empty, non-comment lines and whether sshd accepts its ACL.
func authorizedKeysState(n *Node) (ops.AuthorizedKeysState, error) {
	st := ops.AuthorizedKeysState{Keys: []string{}}
	raw, err := n.ReadFile(PathAdminAuthorizedKeys)
	if errors.Is(err, ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.Exists = true
	for _, line := range keyLines(raw) {
		if !strings.HasPrefix(line, "#") {
			st.Keys = append(st.Keys, line)
		}
	}
	acl, err := n.ACL(PathAdminAuthorizedKeys)
	if err != nil {
		return st, err
	}
	st.ACLOK = AdminOnlyACL(acl)
	return st, nil
}

// keyLines returns the trimmed non-empty lines of an authorized_keys file.
func keyLines(raw []byte) []string {
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

func opRDPSet(_ context.Context, n *Node, req ops.RDPSetRequest) (ops.RDPState, error) {
	deny := uint32(1)
	if req.Enable {
		deny = 0
	}
	if err := n.SetRegistryDWord(KeyTerminalServer, "fDenyTSConnections", deny); err != nil {
		return ops.RDPState{}, err
	}
	for _, name := range req.FirewallRules {
		if _, ok := n.FirewallRule(name); !ok {
			return ops.RDPState{}, Fail("not-found", "firewall rule %s does not exist on this node", name)
		}
		if err := n.SetFirewallRuleEnabled(name, req.Enable); err != nil {
			return ops.RDPState{}, err
		}
	}
	return rdpState(n, req.FirewallRules), nil
}

func opChocoInstall(_ context.Context, n *Node, _ ops.ChocoInstallRequest) (ops.ChocoState, error) {
	if !n.Chocolatey().Installed {
		if err := n.InstallChocolatey(); err != nil {
			var f *OpFailure
			if errors.As(err, &f) && f.Kind == "download" {
				return ops.ChocoState{}, Fail("download-failed",
					"the node could not download the Chocolatey install script from %s: %s (does the node have internet access or a proxy?)",
					chocoInstallScriptURL, f.Message)
			}
			return ops.ChocoState{}, err
		}
	}
	// As the op: the version of choco.exe, no package list.
	return ops.ChocoState{Installed: true, Version: n.Chocolatey().Version, Packages: []ops.ChocoPackage{}}, nil
}

func opChocoPackages(_ context.Context, n *Node, req ops.ChocoPackagesRequest) (ops.ChocoPackagesResponse, error) {
	if !n.Chocolatey().Installed {
		return ops.ChocoPackagesResponse{}, Fail("not-found", "Chocolatey is not installed (%s is missing)", PathChoco)
	}
	resp := ops.ChocoPackagesResponse{Results: []ops.ChocoPackageResult{}}
	for _, name := range req.Packages {
		res, err := n.ChocoInstall(name)
		if err != nil {
			return ops.ChocoPackagesResponse{}, err
		}
		r := ops.ChocoPackageResult{Name: name, Result: ops.PackageFailed, ExitCode: res.ExitCode,
			RebootRequired: res.ExitCode == 1641 || res.ExitCode == 3010}
		switch res.ExitCode {
		case 0, 1641, 3010:
			r.Result = ops.PackageInstalled
			r.Version = res.Version
		default:
			r.Output = chocoFailureOutput(name, res.Output)
			if strings.Contains(r.Output, "not found with the source") {
				r.Result = ops.PackageNotFound
			}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, nil
}

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

func opAuthorizedKeysAdd(_ context.Context, n *Node, req ops.AuthorizedKeysAddRequest) (ops.AuthorizedKeysState, error) {
	if !n.IsAdmin() {
		return ops.AuthorizedKeysState{}, Fail("exception", "Access to the path '%s' is denied.", PathAdminAuthorizedKeys)
	}
	if err := n.MkdirAll(`C:\ProgramData\ssh`); err != nil {
		return ops.AuthorizedKeysState{}, err
	}
	raw, err := n.ReadFile(PathAdminAuthorizedKeys)
	if err != nil && !errors.Is(err, ErrNotExist) {
		return ops.AuthorizedKeysState{}, err
	}
	present := keyLines(raw)
	endsWithNewline := len(raw) == 0 || raw[len(raw)-1] == '\n'
	var appended strings.Builder
	added := 0
	for _, key := range req.Keys {
		line := strings.TrimSpace(key)
		if line == "" || slices.Contains(present, line) {
			continue
		}
		if !endsWithNewline {
			appended.WriteString("\r\n")
			endsWithNewline = true
		}
		appended.WriteString(line + "\r\n")
		present = append(present, line)
		added++
	}
	// AppendFile creates the file when it is missing, as the op does even
	// with nothing to add.
	if err := n.AppendFile(PathAdminAuthorizedKeys, []byte(appended.String())); err != nil {
		return ops.AuthorizedKeysState{}, err
	}
	if err := n.SetACL(PathAdminAuthorizedKeys, adminOnlyACL()); err != nil {
		return ops.AuthorizedKeysState{}, err
	}
	st, err := authorizedKeysState(n)
	if err != nil {
		return ops.AuthorizedKeysState{}, err
	}
	st.Added = added
	return st, nil
}
