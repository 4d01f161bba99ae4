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
type Script struct {
	name string
	// prelude, when set, names a fixed file of scripts/ whose text runs
	// before the script's own (the helpers several scripts share).
	prelude string
}

// Name is the script's file name without .ps1.
func (s Script) Name() string { return s.name }

// Source is the script's text: its prelude's, if it has one, then its
// own.
func (s Script) Source() string {
	if s.prelude == "" {
		return embedded(s.name)
	}
	return embedded(s.prelude) + embedded(s.name)
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
	ScriptFirewallRules = Script{name: "firewall-rules"}
	// ScriptFirewallSet enables or disables rules by name: input
	// {"names":[...], "enabled":bool}.
	ScriptFirewallSet = Script{name: "firewall-set"}
	// ScriptServiceEvents reads the Service Control Manager's System
	// event log messages that name a service: input {"names": [service
	// name, display name], "since" (RFC 3339), "max"}, output a JSON array
	// of strings, newest first.
	ScriptServiceEvents = Script{name: "service-events"}
)

// hypervPrelude is the text every Hyper-V script starts with: reading the
// request, the result and failure lines, the Hyper-V module check and the
// lookups of VMs and checkpoints by name (scripts/hyperv-prelude.ps1).
const hypervPrelude = "hyperv-prelude"

// The Hyper-V scripts, one per Hyper-V op of pkg/ops (same names). Each
// reads the op's request as JSON from stdin and prints one JSON line:
// {"data": result} or, exiting 1, {"error": {"kind", "message"}}.
var (
	// ScriptHyperVVMStatus reports a VM's state and checkpoints.
	ScriptHyperVVMStatus = Script{name: "hyperv-vm-status", prelude: hypervPrelude}
	// ScriptHyperVVMStart starts or resumes a VM.
	ScriptHyperVVMStart = Script{name: "hyperv-vm-start", prelude: hypervPrelude}
	// ScriptHyperVVMStop shuts a VM down, turning it off after the
	// request's timeout.
	ScriptHyperVVMStop = Script{name: "hyperv-vm-stop", prelude: hypervPrelude}
	// ScriptHyperVCheckpointCreate takes a checkpoint of a VM.
	ScriptHyperVCheckpointCreate = Script{name: "hyperv-checkpoint-create", prelude: hypervPrelude}
	// ScriptHyperVCheckpointRestore applies a checkpoint of a VM.
	ScriptHyperVCheckpointRestore = Script{name: "hyperv-checkpoint-restore", prelude: hypervPrelude}
	// ScriptHyperVCheckpointList lists a VM's checkpoints.
	ScriptHyperVCheckpointList = Script{name: "hyperv-checkpoint-list", prelude: hypervPrelude}
	// ScriptHyperVVMAddresses lists a VM's adapters and addresses.
	ScriptHyperVVMAddresses = Script{name: "hyperv-vm-addresses", prelude: hypervPrelude}
)

// Scripts lists every fixed script, sorted by name.
func Scripts() []Script {
	all := []Script{ScriptLanguageMode, ScriptChocoInstall, ScriptFirewallRules, ScriptFirewallSet, ScriptServiceEvents,
		ScriptHyperVVMStatus, ScriptHyperVVMStart, ScriptHyperVVMStop, ScriptHyperVCheckpointCreate,
		ScriptHyperVCheckpointRestore, ScriptHyperVCheckpointList, ScriptHyperVVMAddresses}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	return all
}
