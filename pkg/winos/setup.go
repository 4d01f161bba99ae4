package winos

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// The error controls of a service (SERVICE_ERROR_*): what Windows does
// when the service fails to start at boot. Ignore leaves no trace in the
// event log; Normal logs the failure and boots on.
const (
	ErrorControlIgnore   = "Ignore"
	ErrorControlNormal   = "Normal"
	ErrorControlSevere   = "Severe"
	ErrorControlCritical = "Critical"
)

// errorControls are the error controls by their SERVICE_ERROR_* value.
var errorControls = []string{ErrorControlIgnore, ErrorControlNormal, ErrorControlSevere, ErrorControlCritical}

// errorControlName is the name of a SERVICE_ERROR_* value.
func errorControlName(v uint32) string {
	if int(v) < len(errorControls) {
		return errorControls[v]
	}
	return fmt.Sprintf("%d", v)
}

// errorControlValue is the SERVICE_ERROR_* value of a name; "" and an
// unknown name are ok=false.
func errorControlValue(name string) (uint32, bool) {
	for i, n := range errorControls {
		if strings.EqualFold(n, name) {
			return uint32(i), true
		}
	}
	return 0, false
}

// FirewallRuleSpec is a rule to create: it allows Protocol traffic to
// LocalPort in Direction, on every profile.
type FirewallRuleSpec struct {
	// Name addresses the rule (not localized); DisplayName is what the
	// firewall's console shows.
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	// Direction is Inbound or Outbound; Protocol TCP or UDP.
	Direction string `json:"direction"`
	Protocol  string `json:"protocol"`
	LocalPort int    `json:"port"`
}

// FeatureState is a Windows feature's install state, as
// Get-WindowsFeature's InstallState names it.
type FeatureState string

// The feature states swdt tells apart.
const (
	FeatureInstalled FeatureState = "Installed"
	// FeatureInstallPending is installed, waiting for a reboot.
	FeatureInstallPending FeatureState = "InstallPending"
	FeatureAvailable      FeatureState = "Available"
)

// ErrScriptSilent is a fixed script that printed nothing at all, not
// even an error: every script prints a result, so the powershell.exe
// that ran it is not Windows PowerShell (Wine's is a stub).
var ErrScriptSilent = errors.New("powershell.exe printed nothing: it is not Windows PowerShell")

// silent reports a script run that printed nothing.
func silent(s Script, res Result) error {
	if len(bytes.TrimSpace(res.Stdout)) == 0 && len(bytes.TrimSpace(res.Stderr)) == 0 {
		return fmt.Errorf("script %s (exit code %d): %w", s.Name(), res.ExitCode, ErrScriptSilent)
	}
	return nil
}

type featureInput struct {
	Name    string `json:"name"`
	Install bool   `json:"install"`
}

type featureOutput struct {
	Name          string `json:"name"`
	State         string `json:"state"`
	RestartNeeded bool   `json:"restartNeeded"`
}

// featureState decodes ScriptWindowsFeature's output.
func featureState(res Result) (FeatureState, error) {
	var out featureOutput
	if err := scriptOutput(ScriptWindowsFeature, res, &out); err != nil {
		return "", err
	}
	switch st := FeatureState(out.State); {
	case out.RestartNeeded || st == FeatureInstallPending:
		return FeatureInstallPending, nil
	case st == FeatureInstalled || st == FeatureAvailable:
		return st, nil
	}
	return "", fmt.Errorf("script %s reported feature %s in state %q, which swdt does not know", ScriptWindowsFeature.Name(), out.Name, out.State)
}

type firewallCreateOutput struct {
	Created bool `json:"created"`
}

type firewallRemoveInput struct {
	Names []string `json:"names"`
}

type firewallRemoveOutput struct {
	Removed []string `json:"removed"`
}

// firewallCreated decodes ScriptFirewallRuleCreate's output.
func firewallCreated(res Result, name string) error {
	var out firewallCreateOutput
	if err := scriptOutput(ScriptFirewallRuleCreate, res, &out); err != nil {
		return err
	}
	if !out.Created {
		return fmt.Errorf("script %s did not create rule %s", ScriptFirewallRuleCreate.Name(), name)
	}
	return nil
}

// firewallRemoved decodes ScriptFirewallRuleRemove's output.
func firewallRemoved(res Result) ([]string, error) {
	var out firewallRemoveOutput
	if err := scriptOutput(ScriptFirewallRuleRemove, res, &out); err != nil {
		return nil, err
	}
	return nonNil(out.Removed), nil
}
