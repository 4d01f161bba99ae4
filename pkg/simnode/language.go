package simnode

import (
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/winos"
)

// PowerShell's Constrained Language mode. Under a WDAC or AppLocker
// policy powershell.exe runs scripts in ConstrainedLanguage: only core
// types may be used, so a script that calls [Console]::OpenStandardInput,
// creates an IO.StreamReader or sets [Console]::OutputEncoding stops with
// a script error. swdt's fixed scripts that do are refused here the same
// way (--language-mode constrained, State.LanguageMode).

// LanguageConstrained is State.LanguageMode on a node under an
// application control policy.
const LanguageConstrained = "ConstrainedLanguage"

// ParseLanguageMode checks a --language-mode value: full or constrained.
func ParseLanguageMode(s string) (string, error) {
	switch s {
	case "full":
		return "FullLanguage", nil
	case "constrained":
		return LanguageConstrained, nil
	}
	return "", fmt.Errorf("unknown language mode %q: want full or constrained", s)
}

// fullLanguageScripts are the fixed scripts that use non-core types.
var fullLanguageScripts = map[string]bool{
	winos.ScriptFirewallRules.Name(): true,
	winos.ScriptFirewallSet.Name():   true,
	winos.ScriptServiceEvents.Name(): true,
	winos.ScriptChocoInstall.Name():  true,
}

// constrainedScript is what powershell.exe does with script s when the
// node's language mode refuses it.
func (n *Node) constrainedScript(s winos.Script) (winos.Result, bool) {
	if n.LanguageMode() != LanguageConstrained || !fullLanguageScripts[s.Name()] {
		return winos.Result{}, false
	}
	return winos.Result{ExitCode: 1, Stderr: []byte("Cannot invoke method. Method invocation is supported only on core types in this language mode.\r\n" +
		"At line:4 char:1\r\n+ $in = [Console]::OpenStandardInput()\r\n+ ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\r\n" +
		"    + CategoryInfo          : InvalidOperation: (:) [], RuntimeException\r\n    + FullyQualifiedErrorId : MethodInvocationNotSupportedInConstrainedLanguage\r\n")}, true
}

// constrainedErr is the error the Windows layer's script-backed methods
// (the firewall's, the event log's) return when the language mode refuses their script.
func (n *Node) constrainedErr(s winos.Script) error {
	res, refused := n.constrainedScript(s)
	if !refused {
		return nil
	}
	return fmt.Errorf("script %s exited with code %d: %s", s.Name(), res.ExitCode, strings.TrimSpace(string(res.Stderr)))
}
