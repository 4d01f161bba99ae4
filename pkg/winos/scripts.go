package winos

import (
	"embed"
	"sort"
	"strings"
)

//go:embed scripts/*.ps1
var scriptFS embed.FS

// Script is one of the fixed PowerShell programs the agent may run: only
// where Windows offers no API swdt can call from Go. A Script can only be
// one of this package's values, so no script text is ever built at run
// time; a script reads its parameters as JSON from stdin.
//
// Each script's own text says, on its second line, the language mode it
// needs: "# language: constrained" (it uses only what PowerShell's
// Constrained Language mode allows, so it runs on a node under WDAC or
// AppLocker) or "# language: full".
type Script struct {
	name string
	// preludes name fixed files of scripts/ whose text runs before the
	// script's own, in order (the helpers several scripts share); unused
	// ones are empty. An array keeps Script comparable.
	preludes [2]string
}

// Name is the script's file name without .ps1.
func (s Script) Name() string { return s.name }

// Source is the script's text: its preludes', if it has any, then its
// own.
func (s Script) Source() string {
	var b strings.Builder
	for _, p := range s.preludes {
		if p != "" {
			b.WriteString(embedded(p))
		}
	}
	b.WriteString(embedded(s.name))
	return b.String()
}

// embedded is the text of scripts/NAME.ps1.
func embedded(name string) string {
	raw, err := scriptFS.ReadFile("scripts/" + name + ".ps1")
	if err != nil {
		panic("winos: script " + name + " is not embedded") // a test checks all are
	}
	return string(raw)
}

// The fixed scripts.
var (
	// ScriptLanguageMode prints the session's language mode
	// (FullLanguage, ConstrainedLanguage, ...).
	ScriptLanguageMode = Script{name: "language-mode"}
	// ScriptChocoInstall runs Chocolatey's community install script.
	ScriptChocoInstall = Script{name: "choco-install"}
	// ScriptFirewallRules reads firewall rules by name: input
	// {"names":[...]}, output one JSON array of {name, exists, enabled}.
	ScriptFirewallRules = Script{name: "firewall-rules", preludes: [2]string{requestPrelude}}
	// ScriptFirewallSet enables or disables rules by name: input
	// {"names":[...], "enabled":bool}.
	ScriptFirewallSet = Script{name: "firewall-set", preludes: [2]string{requestPrelude}}
	// ScriptFirewallRuleCreate creates an enabled allow rule for one local
	// port: input FirewallRuleSpec's JSON, output {"created": true} or
	// {"error": message}.
	ScriptFirewallRuleCreate = Script{name: "firewall-rule-create", preludes: [2]string{requestPrelude}}
	// ScriptFirewallRuleRemove deletes rules by name: input
	// {"names":[...]}, output {"removed": [names that existed]} or
	// {"error": message}.
	ScriptFirewallRuleRemove = Script{name: "firewall-rule-remove", preludes: [2]string{requestPrelude}}
	// ScriptWindowsFeature reads, and with install installs, a Windows
	// feature: input {"name", "install"}, output {"name", "state",
	// "restartNeeded"} or {"error": message}.
	ScriptWindowsFeature = Script{name: "windows-feature", preludes: [2]string{requestPrelude}}
	// ScriptServiceEvents reads the Service Control Manager's System
	// event log messages that name a service: input {"names": [service
	// name, display name], "since" (RFC 3339), "max"}, output a JSON array
	// of strings, newest first.
	ScriptServiceEvents = Script{name: "service-events", preludes: [2]string{requestPrelude}}
)

// requestPrelude is the text every script that takes a request starts
// with: reading the request as Constrained Language mode allows, and
// printing JSON whatever the console's code page
// (scripts/request-prelude.ps1).
const requestPrelude = "request-prelude"

// hypervPrelude follows requestPrelude in every Hyper-V script: the
// result and failure lines, the Hyper-V module check and the lookups of
// VMs and checkpoints by name (scripts/hyperv-prelude.ps1).
const hypervPrelude = "hyperv-prelude"

// hypervPreludes are the preludes of the Hyper-V scripts.
var hypervPreludes = [2]string{requestPrelude, hypervPrelude}

// The Hyper-V scripts, one per Hyper-V op of pkg/ops (same names). Each
// reads the op's request as JSON from stdin and prints one JSON line:
// {"data": result} or, exiting 1, {"error": {"kind", "message"}}.
var (
	// ScriptHyperVVMStatus reports a VM's state and checkpoints.
	ScriptHyperVVMStatus = Script{name: "hyperv-vm-status", preludes: hypervPreludes}
	// ScriptHyperVVMStart starts or resumes a VM.
	ScriptHyperVVMStart = Script{name: "hyperv-vm-start", preludes: hypervPreludes}
	// ScriptHyperVVMStop shuts a VM down, turning it off after the
	// request's timeout.
	ScriptHyperVVMStop = Script{name: "hyperv-vm-stop", preludes: hypervPreludes}
	// ScriptHyperVCheckpointCreate takes a checkpoint of a VM.
	ScriptHyperVCheckpointCreate = Script{name: "hyperv-checkpoint-create", preludes: hypervPreludes}
	// ScriptHyperVCheckpointRestore applies a checkpoint of a VM.
	ScriptHyperVCheckpointRestore = Script{name: "hyperv-checkpoint-restore", preludes: hypervPreludes}
	// ScriptHyperVCheckpointList lists a VM's checkpoints.
	ScriptHyperVCheckpointList = Script{name: "hyperv-checkpoint-list", preludes: hypervPreludes}
	// ScriptHyperVVMAddresses lists a VM's adapters and addresses.
	ScriptHyperVVMAddresses = Script{name: "hyperv-vm-addresses", preludes: hypervPreludes}
)

// Scripts lists every fixed script, sorted by name.
func Scripts() []Script {
	all := []Script{ScriptLanguageMode, ScriptChocoInstall, ScriptFirewallRules, ScriptFirewallSet, ScriptServiceEvents,
		ScriptFirewallRuleCreate, ScriptFirewallRuleRemove, ScriptWindowsFeature,
		ScriptHyperVVMStatus, ScriptHyperVVMStart, ScriptHyperVVMStop, ScriptHyperVCheckpointCreate,
		ScriptHyperVCheckpointRestore, ScriptHyperVCheckpointList, ScriptHyperVVMAddresses}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	return all
}
