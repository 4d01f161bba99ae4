package simos

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The Windows layer's firewall rules and Windows features, played as
// their fixed scripts would leave the node (scripts.go plays the same
// scripts by name).

func (o simOS) CreateFirewallRule(_ context.Context, r winos.FirewallRuleSpec) error {
	if err := o.stubScript(winos.ScriptFirewallRuleCreate); err != nil {
		return err
	}
	if err := o.n.constrainedErr(winos.ScriptFirewallRuleCreate); err != nil {
		return err
	}
	return winErr("create firewall rule", r.Name, o.n.createRule(r))
}

func (o simOS) RemoveFirewallRules(_ context.Context, names []string) ([]string, error) {
	if err := o.stubScript(winos.ScriptFirewallRuleRemove); err != nil {
		return nil, err
	}
	if err := o.n.constrainedErr(winos.ScriptFirewallRuleRemove); err != nil {
		return nil, err
	}
	return o.n.removeRules(names)
}

func (o simOS) WindowsFeature(_ context.Context, name string) (winos.FeatureState, error) {
	if err := o.stubScript(winos.ScriptWindowsFeature); err != nil {
		return "", err
	}
	if err := o.n.constrainedErr(winos.ScriptWindowsFeature); err != nil {
		return "", err
	}
	st, err := o.n.Feature(name)
	return winos.FeatureState(st), winErr("read Windows feature", name, err)
}

func (o simOS) InstallWindowsFeature(_ context.Context, name string) (winos.FeatureState, error) {
	if err := o.stubScript(winos.ScriptWindowsFeature); err != nil {
		return "", err
	}
	if err := o.n.constrainedErr(winos.ScriptWindowsFeature); err != nil {
		return "", err
	}
	if !o.n.IsAdmin() {
		return "", &winos.Error{Op: "install Windows feature", Target: name, Code: winos.ErrAccessDenied,
			Message: "The requested operation requires elevation."}
	}
	if _, err := o.n.InstallFeature(name); err != nil {
		return "", winErr("install Windows feature", name, err)
	}
	st, err := o.n.Feature(name)
	return winos.FeatureState(st), winErr("read Windows feature", name, err)
}

// createRule checks a rule as the script does and adds it.
func (n *Node) createRule(r winos.FirewallRuleSpec) error {
	switch {
	case r.Direction != "Inbound" && r.Direction != "Outbound":
		return machine.Fail(ops.KindInvalidArgument, "direction '%s' is not Inbound or Outbound", r.Direction)
	case r.Protocol != "TCP" && r.Protocol != "UDP":
		return machine.Fail(ops.KindInvalidArgument, "protocol '%s' is not TCP or UDP", r.Protocol)
	case r.LocalPort < 1 || r.LocalPort > 65535:
		return machine.Fail(ops.KindInvalidArgument, "port %d is not between 1 and 65535", r.LocalPort)
	case !n.IsAdmin():
		return machine.Fail(ops.KindAccessDenied, "Access is denied.")
	}
	return n.CreateFirewallRule(machine.FirewallRule{Name: r.Name, DisplayName: r.DisplayName, Direction: r.Direction,
		Protocol: r.Protocol, LocalPort: strconv.Itoa(r.LocalPort)})
}

// removeRules removes the rules that exist and names them.
func (n *Node) removeRules(names []string) ([]string, error) {
	removed := []string{}
	for _, name := range names {
		if _, ok := n.FirewallRule(name); ok && !n.IsAdmin() {
			return removed, &winos.Error{Op: "remove firewall rule", Target: name, Code: winos.ErrAccessDenied, Message: "Access is denied."}
		}
		existed, err := n.RemoveFirewallRule(name)
		if err != nil {
			return removed, winErr("remove firewall rule", name, err)
		}
		if existed {
			removed = append(removed, name)
		}
	}
	return removed, nil
}

// featureError is the message of the script's failure line for err.
func featureError(err error) string {
	var f *machine.OpFailure
	if errors.As(err, &f) {
		return f.Message
	}
	return strings.TrimSpace(err.Error())
}

func (o simOS) SetErrorControl(name, errorControl string) error {
	if errorControl != winos.ErrorControlIgnore && errorControl != winos.ErrorControlNormal {
		return &winos.Error{Op: "change service error control", Target: name, Code: winos.ErrInvalidParameter,
			Message: "simnode models the error controls Ignore and Normal only"}
	}
	return winErr("change service error control", name, o.n.ConfigureService(name, func(c *machine.ServiceConfig) { c.ErrorControl = errorControl }))
}
