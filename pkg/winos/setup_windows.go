//go:build windows

package winos

import (
	"context"

	"golang.org/x/sys/windows"
)

// CreateFirewallRule runs ScriptFirewallRuleCreate: rules are COM
// objects (INetFwPolicy2) or CIM classes, with no flat API to call from
// Go.
func (o windowsOS) CreateFirewallRule(ctx context.Context, r FirewallRuleSpec) error {
	res, err := o.RunScript(ctx, ScriptFirewallRuleCreate, scriptInput(r))
	if err != nil {
		return err
	}
	return firewallCreated(res, r.Name)
}

// RemoveFirewallRules runs ScriptFirewallRuleRemove.
func (o windowsOS) RemoveFirewallRules(ctx context.Context, names []string) ([]string, error) {
	res, err := o.RunScript(ctx, ScriptFirewallRuleRemove, scriptInput(firewallRemoveInput{Names: nonNil(names)}))
	if err != nil {
		return nil, err
	}
	return firewallRemoved(res)
}

// WindowsFeature runs ScriptWindowsFeature: Windows features are served
// by CBS through DISM and Server Manager's CIM provider, with no flat
// API to call from Go.
func (o windowsOS) WindowsFeature(ctx context.Context, name string) (FeatureState, error) {
	return o.feature(ctx, name, false)
}

// InstallWindowsFeature runs ScriptWindowsFeature with install set.
func (o windowsOS) InstallWindowsFeature(ctx context.Context, name string) (FeatureState, error) {
	return o.feature(ctx, name, true)
}

func (o windowsOS) feature(ctx context.Context, name string, install bool) (FeatureState, error) {
	res, err := o.RunScript(ctx, ScriptWindowsFeature, scriptInput(featureInput{Name: name, Install: install}))
	if err != nil {
		return "", err
	}
	return featureState(res)
}

// SetErrorControl is ChangeServiceConfig with SERVICE_NO_CHANGE for
// everything but the error control.
func (windowsOS) SetErrorControl(name, errorControl string) error {
	v, ok := errorControlValue(errorControl)
	if !ok {
		return &Error{Op: "change service error control", Target: name, Code: ErrInvalidParameter, Message: "unknown error control " + errorControl}
	}
	s, err := openService(name, windows.SERVICE_CHANGE_CONFIG)
	if err != nil {
		return winErr("open service", name, err)
	}
	defer s.close()
	err = windows.ChangeServiceConfig(s.Handle, windows.SERVICE_NO_CHANGE, windows.SERVICE_NO_CHANGE, v, nil, nil, nil, nil, nil, nil, nil)
	return winErr("change service error control", name, err)
}
