package machine

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
)

// normKey spells a registry key as HKLM:\..., accepting HKLM\,
// HKEY_LOCAL_MACHINE\ and Registry::HKEY_LOCAL_MACHINE\ too.
func normKey(key string) string {
	k := strings.TrimPrefix(key, "Registry::")
	k = strings.ReplaceAll(k, "/", `\`)
	for _, pre := range []string{`HKEY_LOCAL_MACHINE\`, `HKLM\`} {
		if len(k) >= len(pre) && strings.EqualFold(k[:len(pre)], pre) {
			k = `HKLM:\` + k[len(pre):]
		}
	}
	if len(k) >= 5 && strings.EqualFold(k[:5], `HKLM:`) {
		k = "HKLM:" + k[5:]
	}
	return strings.TrimSuffix(k, `\`)
}

// RegistryValue returns the value name of key (Get-ItemProperty).
func (n *Node) RegistryValue(key, name string) (RegistryValue, bool) {
	var out RegistryValue
	var ok bool
	n.m.view(func(s *State, _ time.Time) {
		if k := s.Registry[strings.ToLower(normKey(key))]; k != nil {
			if v := k.Values[strings.ToLower(name)]; v != nil {
				out, ok = *v, true
				out.Strings = append([]string(nil), v.Strings...)
			}
		}
	})
	return out, ok
}

// RegistryValues returns every value of key, sorted by name.
func (n *Node) RegistryValues(key string) ([]RegistryValue, bool) {
	var out []RegistryValue
	var ok bool
	n.m.view(func(s *State, _ time.Time) {
		k := s.Registry[strings.ToLower(normKey(key))]
		if k == nil {
			return
		}
		ok = true
		for _, name := range sortedKeys(k.Values) {
			out = append(out, *k.Values[name])
		}
	})
	return out, ok
}

// SetRegistryValue creates or replaces a value (Set-ItemProperty /
// New-ItemProperty -Force), creating the key.
func (n *Node) SetRegistryValue(key string, v RegistryValue) error {
	switch v.Kind {
	case "DWord", "QWord", "String", "ExpandString", "MultiString":
	default:
		return Fail(ops.KindInvalidArgument, "unknown registry value kind %q", v.Kind)
	}
	key = normKey(key)
	if !strings.HasPrefix(key, `HKLM:\`) {
		return Fail(ops.KindInvalidArgument, "simnode only simulates HKLM, not %q", key)
	}
	return n.m.update(func(s *State, _ time.Time) error {
		k := s.Registry[strings.ToLower(key)]
		if k == nil {
			k = &RegistryKey{Path: key, Values: map[string]*RegistryValue{}}
			s.Registry[strings.ToLower(key)] = k
		}
		c := v
		if old := k.Values[strings.ToLower(v.Name)]; old != nil {
			c.Name = old.Name
		}
		c.Strings = append([]string(nil), v.Strings...)
		k.Values[strings.ToLower(v.Name)] = &c
		return nil
	})
}

// SetRegistryDWord is SetRegistryValue for a DWORD.
func (n *Node) SetRegistryDWord(key, name string, value uint32) error {
	return n.SetRegistryValue(key, RegistryValue{Name: name, Kind: "DWord", Number: int64(value)})
}

// DeleteRegistryValue removes a value; a missing one is not an error.
func (n *Node) DeleteRegistryValue(key, name string) error {
	return n.m.update(func(s *State, _ time.Time) error {
		if k := s.Registry[strings.ToLower(normKey(key))]; k != nil {
			delete(k.Values, strings.ToLower(name))
		}
		return nil
	})
}

// FirewallRule returns the rule with that name (Get-NetFirewallRule -Name).
func (n *Node) FirewallRule(name string) (FirewallRule, bool) {
	var out FirewallRule
	var ok bool
	n.m.view(func(s *State, _ time.Time) {
		if r := s.Firewall[strings.ToLower(name)]; r != nil {
			out, ok = *r, true
		}
	})
	return out, ok
}

// FirewallRules returns every rule, sorted by name.
func (n *Node) FirewallRules() []FirewallRule {
	var out []FirewallRule
	n.m.view(func(s *State, _ time.Time) {
		for _, k := range sortedKeys(s.Firewall) {
			out = append(out, *s.Firewall[k])
		}
	})
	return out
}

// SetFirewallRuleEnabled enables or disables a rule by name
// (Enable-/Disable-NetFirewallRule -Name); an unknown name is "not-found".
func (n *Node) SetFirewallRuleEnabled(name string, enabled bool) error {
	return n.m.update(func(s *State, _ time.Time) error {
		r := s.Firewall[strings.ToLower(name)]
		if r == nil {
			return Fail(ops.KindNotFound, "No MSFT_NetFirewallRule objects found with property 'Name' equal to '%s'.", name)
		}
		r.Enabled = enabled
		return nil
	})
}

// Chocolatey returns a copy of the Chocolatey state.
func (n *Node) Chocolatey() Chocolatey {
	var out Chocolatey
	n.m.view(func(s *State, _ time.Time) {
		out = s.Chocolatey
		out.Packages = map[string]string{}
		for k, v := range s.Chocolatey.Packages {
			out.Packages[k] = v
		}
		out.Catalog = nil
	})
	return out
}

// ChocoDownloadError is the error the community install script prints on
// a node without internet access.
const ChocoDownloadError = `Exception calling "DownloadString" with "1" argument(s): "The remote name could not be resolved: 'community.chocolatey.org'"`

// ChocoRebootError is what Chocolatey 2's installer throws once it has
// installed .NET Framework 4.8 (chocolateysetup.psm1,
// Install-DotNet48IfMissing).
const ChocoRebootError = ".NET Framework 4.8 was installed, but a reboot is required. \n Please reboot the system and try to install/upgrade Chocolatey again."

// ChocoNotAdminError is what Chocolatey's installer throws for an account
// that is not an administrator (chocolateysetup.psm1, Set-Permissions).
const ChocoNotAdminError = "Installation of Chocolatey to default folder requires Administrative permissions. Please run from elevated prompt. " +
	"Please see https://chocolatey.org/install for details and alternatives if needing to install as a non-administrator."

// Registry keys simnode models beyond the seeded ones.
const (
	// KeyNetFx4 holds .NET Framework 4.x's Release number.
	KeyNetFx4 = `HKLM:\SOFTWARE\Microsoft\NET Framework Setup\NDP\v4\Full`
	// KeyPowerShellEngine holds Windows PowerShell's PowerShellVersion.
	KeyPowerShellEngine = `HKLM:\SOFTWARE\Microsoft\PowerShell\3\PowerShellEngine`
	// KeyRDPPolicy is Group Policy's Remote Desktop Services key: its
	// fDenyTSConnections overrides KeyTerminalServer's.
	KeyRDPPolicy = `HKLM:\SOFTWARE\Policies\Microsoft\Windows NT\Terminal Services`
)

// .NET Framework 4.x release numbers (KeyNetFx4's Release).
const (
	// NetFx472Server2019 is 4.7.2 as Windows Server 2019 ships it.
	NetFx472Server2019 = 461814
	// NetFx48 is 4.8 installed on Server 2019 (and most other versions).
	NetFx48 = 528049
	// NetFx48Server2022 is 4.8 as Windows Server 2022 ships it.
	NetFx48Server2022 = 528449
	// netFx48Min is the lowest 4.8 release, what Chocolatey 2 checks for.
	netFx48Min = 528040
)

// InstallChocolatey plays the community install script: it fails with
// ChocoDownloadError (kind "download") when the fault is set. Chocolatey 2
// (State.Chocolatey.InstallVersion) needs .NET Framework 4.8: on a node
// with an older one (Server 2019 ships 4.7.2) the script installs it and
// stops with ChocoRebootError (kind "reboot-required"), and so does every
// attempt until Reboot. An account that is not an administrator then
// fails with ChocoNotAdminError (kind "installer"). Otherwise it installs
// Chocolatey and its choco.exe.
func (n *Node) InstallChocolatey() error {
	if n.ChocoDownloadFails() {
		return Fail(ops.KindDownload, "%s", ChocoDownloadError)
	}
	var version string
	err := n.m.update(func(s *State, _ time.Time) error {
		c := &s.Chocolatey
		if c.InstallVersion == "" {
			c.InstallVersion = "2.2.2"
		}
		if !strings.HasPrefix(c.InstallVersion, "0.") && !strings.HasPrefix(c.InstallVersion, "1.") {
			release := int64(0)
			if k := s.Registry[strings.ToLower(KeyNetFx4)]; k != nil && k.Values["release"] != nil {
				release = k.Values["release"].Number
			}
			if release < netFx48Min || c.NetFxPending {
				c.NetFxPending = true
				return Fail(ops.KindRebootRequired, "%s", ChocoRebootError)
			}
		}
		if !n.IsAdmin() {
			return Fail(ops.KindInstaller, "%s", ChocoNotAdminError)
		}
		c.Installed = true
		c.Version = c.InstallVersion
		version = c.Version
		return nil
	})
	if err != nil {
		return err
	}
	if err := n.MkdirAll(`C:\ProgramData\chocolatey\bin`); err != nil {
		return err
	}
	// The installer locks its default folder down before it puts choco.exe
	// there (chocolateysetup.psm1; chocolatey/choco#398): inheritance off,
	// Administrators and SYSTEM full control, Users read and execute,
	// owned by Administrators.
	if err := n.SetACL(ChocoDir, &ACL{InheritanceDisabled: true, Entries: []ACE{
		{Identity: AccountAdministrators, Rights: "F", ObjectInherit: true, ContainerInherit: true},
		{Identity: AccountSystem, Rights: "F", ObjectInherit: true, ContainerInherit: true},
		{Identity: AccountUsers, Rights: "RX", ObjectInherit: true, ContainerInherit: true},
	}}); err != nil {
		return err
	}
	if err := n.SetOwner(ChocoDir, AccountAdministrators); err != nil {
		return err
	}
	if err := n.WriteFile(PathChoco, []byte("MZ simnode placeholder choco.exe "+version+"\r\n")); err != nil {
		return err
	}
	return n.WriteFile(`C:\ProgramData\chocolatey\bin\choco.exe`, []byte("MZ simnode placeholder choco shim\r\n"))
}

// ChocoInstallResult is what `choco install NAME -y` did.
type ChocoInstallResult struct {
	// ExitCode is choco's exit code: 0, 1641 or 3010 on success, 1 on
	// failure.
	ExitCode int
	Version  string
	// Output is the relevant line of choco's output.
	Output string
}

// ChocoInstall plays `choco install NAME -y --no-progress --limit-output`.
// An installed package is left as it is (exit code 0); a name not in the
// catalogue fails with exit code 1 and choco's "not found" message; a
// catalogue entry whose ExitCode is not a success code (0, 1641, 3010)
// fails with that code, as a package whose install script fails. It is
// an error (kind "not-found") when Chocolatey itself is not installed.
func (n *Node) ChocoInstall(name string) (ChocoInstallResult, error) {
	var res ChocoInstallResult
	err := n.m.update(func(s *State, _ time.Time) error {
		c := &s.Chocolatey
		if !c.Installed {
			return Fail(ops.KindNotFound, "The term '%s' is not recognized as the name of a cmdlet, function, script file, or operable program.", PathChoco)
		}
		key := strings.ToLower(name)
		if v, ok := c.Packages[key]; ok {
			res = ChocoInstallResult{Version: v, Output: fmt.Sprintf("%s v%s already installed.", name, v)}
			return nil
		}
		pkg, ok := c.Catalog[key]
		if !ok || strings.ContainsAny(name, " ;&|<>'\"`$") {
			res = ChocoInstallResult{ExitCode: 1, Output: fmt.Sprintf("%s not installed. The package was not found with the source(s) listed.", name)}
			return nil
		}
		if pkg.ExitCode != 0 && pkg.ExitCode != 1641 && pkg.ExitCode != 3010 {
			res = ChocoInstallResult{ExitCode: pkg.ExitCode, Output: fmt.Sprintf(
				"ERROR: Running [\"C:\\ProgramData\\chocolatey\\lib\\%s\\tools\\chocolateyInstall.ps1\"] was not successful. Exit code was '%d'.", key, pkg.ExitCode)}
			return nil
		}
		c.Packages[key] = pkg.Version
		res = ChocoInstallResult{ExitCode: pkg.ExitCode, Version: pkg.Version, Output: fmt.Sprintf("The install of %s was successful.", key)}
		return nil
	})
	return res, err
}

// ChocoList plays `choco list --limit-output` (v2) and returns name|version
// lines, sorted.
func (n *Node) ChocoList() []string {
	c := n.Chocolatey()
	lines := []string{"chocolatey|" + c.Version}
	if !c.Installed {
		return nil
	}
	for name, v := range c.Packages {
		lines = append(lines, name+"|"+v)
	}
	sort.Strings(lines[1:])
	return lines
}

// Reboot plays a restart of Windows as far as the model keeps state across
// one: a .NET Framework 4.8 install that Chocolatey's installer left
// pending takes effect. Services and processes are left as they are.
func (n *Node) Reboot() error {
	return n.m.update(func(s *State, _ time.Time) error {
		finishNetFx(s)
		return nil
	})
}

// finishNetFx completes a .NET install that waits for a reboot.
func finishNetFx(s *State) {
	if !s.Chocolatey.NetFxPending {
		return
	}
	s.Chocolatey.NetFxPending = false
	key := strings.ToLower(KeyNetFx4)
	if s.Registry[key] == nil {
		s.Registry[key] = &RegistryKey{Path: KeyNetFx4, Values: map[string]*RegistryValue{}}
	}
	s.Registry[key].Values["release"] = &RegistryValue{Name: "Release", Kind: "DWord", Number: NetFx48}
}

// CreateFirewallRule adds an enabled rule (New-NetFirewallRule); a rule
// of that name that exists already is an error of kind "exists", as
// New-NetFirewallRule refuses a duplicate name.
func (n *Node) CreateFirewallRule(r FirewallRule) error {
	if r.Name == "" {
		return Fail(ops.KindInvalidArgument, "Cannot validate argument on parameter 'Name'. The argument is null or empty.")
	}
	return n.m.update(func(s *State, _ time.Time) error {
		key := strings.ToLower(r.Name)
		if s.Firewall[key] != nil {
			return Fail(ops.KindExists, "Cannot create a file when that file already exists. (rule %s)", r.Name)
		}
		c := r
		c.Enabled = true
		s.Firewall[key] = &c
		return nil
	})
}

// RemoveFirewallRule deletes a rule by name (Remove-NetFirewallRule) and
// reports whether it existed.
func (n *Node) RemoveFirewallRule(name string) (bool, error) {
	existed := false
	err := n.m.update(func(s *State, _ time.Time) error {
		key := strings.ToLower(name)
		existed = s.Firewall[key] != nil
		delete(s.Firewall, key)
		return nil
	})
	return existed, err
}
