package winos

import (
	"embed"
	"sort"
)

//go:embed scripts/*.ps1
var scriptFS embed.FS

// Script is one of the fixed PowerShell programs the agent may run: only
// where Windows offers no API swdt can call from Go. A Script can only be
// one of this package's values, so no script text is ever built at run
// time; a script reads its parameters as JSON from stdin.
type Script struct{ name string }

// Name is the script's file name without .ps1.
func (s Script) Name() string { return s.name }

// Source is the script's text.
func (s Script) Source() string {
	raw, err := scriptFS.ReadFile("scripts/" + s.name + ".ps1")
	if err != nil {
		panic("winos: script " + s.name + " is not embedded") // a test checks all are
	}
	return string(raw)
}

// The fixed scripts.
var (
	// ScriptLanguageMode prints the session's language mode
	// (FullLanguage, ConstrainedLanguage, ...).
	ScriptLanguageMode = Script{"language-mode"}
	// ScriptChocoInstall runs Chocolatey's community install script.
	ScriptChocoInstall = Script{"choco-install"}
	// ScriptFirewallRules reads firewall rules by name: input
	// {"names":[...]}, output one JSON array of {name, exists, enabled}.
	ScriptFirewallRules = Script{"firewall-rules"}
	// ScriptFirewallSet enables or disables rules by name: input
	// {"names":[...], "enabled":bool}.
	ScriptFirewallSet = Script{"firewall-set"}
	// ScriptServiceEvents reads the Service Control Manager's System
	// event log messages that name a service: input {"names": [service
	// name, display name], "since" (RFC 3339), "max"}, output a JSON array
	// of strings, newest first.
	ScriptServiceEvents = Script{"service-events"}
)

// Scripts lists every fixed script, sorted by name.
func Scripts() []Script {
	all := []Script{ScriptLanguageMode, ScriptChocoInstall, ScriptFirewallRules, ScriptFirewallSet, ScriptServiceEvents}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	return all
}
