package agent

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// A joined node is set up as sig-windows-tools' scripts set one up: the
// Containers feature on (Install-Containerd.ps1, which then reboots),
// the kubelet's port open (PrepareNode.ps1), and services that the
// service control manager restarts when they exit (containerd's own
// --register-service; nssm for PrepareNode's kubelet) and whose failure
// to start at boot is logged (ErrorControl Normal). The names and
// settings are fixed here; a request only says which apply.

// noPowerShell says why a fixed script could not run, when the reason is
// that this system has no Windows PowerShell (a Server Core without it,
// or Wine's powershell.exe, which prints nothing), else "".
func noPowerShell(err error) string {
	switch c := winos.Code(err); {
	case c == winos.ErrFileNotFound || c == winos.ErrPathNotFound:
		return fmt.Sprintf("this system has no Windows PowerShell (%v)", err)
	case errors.Is(err, winos.ErrScriptSilent):
		return err.Error()
	}
	return ""
}

// joinFeature reads the Containers feature and installs it when asked.
// A system without Windows PowerShell answers NotSupported: the join
// goes on and says so.
func joinFeature(ctx context.Context, w winos.OS, req ops.JoinFeatureRequest) (ops.JoinFeatureResponse, error) {
	var resp ops.JoinFeatureResponse
	st, err := w.WindowsFeature(ctx, ops.JoinContainersFeature)
	if why := noPowerShell(err); why != "" {
		resp.NotSupported = why
		return resp, nil
	}
	if err != nil {
		return resp, fmt.Errorf("read the Windows feature %s: %w", ops.JoinContainersFeature, err)
	}
	if st == winos.FeatureAvailable && req.Install {
		if st, err = w.InstallWindowsFeature(ctx, ops.JoinContainersFeature); err != nil {
			return resp, fmt.Errorf("install the Windows feature %s (Install-WindowsFeature -Name %s): %w", ops.JoinContainersFeature, ops.JoinContainersFeature, err)
		}
		resp.Installed = true
	}
	resp.State = string(st)
	return resp, nil
}

// joinRecovery is the failure actions a join gives its services.
func joinRecovery() winos.Recovery {
	r := winos.Recovery{ResetPeriod: ops.JoinRestartReset}
	for _, d := range ops.JoinRestartDelays {
		r.Actions = append(r.Actions, winos.RecoveryAction{Type: winos.RecoveryRestart, Delay: d})
	}
	return r
}

// joinSetup creates or enables the join's firewall rules and gives each
// existing service of the request the join's restart actions and
// ErrorControl Normal; what already is so is left alone.
func joinSetup(ctx context.Context, w winos.OS, req ops.JoinSetupRequest) (ops.JoinSetupResponse, error) {
	var resp ops.JoinSetupResponse
	rules := []ops.JoinFirewallRule{ops.JoinRuleKubelet}
	if req.KubeProxy {
		rules = append(rules, ops.JoinRuleKubeProxy)
	}
	created, why, err := joinRules(ctx, w, rules)
	if err != nil {
		return resp, err
	}
	resp.Rules = created
	if why != "" {
		resp.NotSupported = append(resp.NotSupported, "firewall rules: "+why+": open TCP "+joinPorts(rules)+" inbound yourself")
	}
	want := joinRecovery()
	for _, name := range req.Services {
		svc, err := w.Service(name)
		if winsNotFound(err) {
			continue
		}
		if err != nil {
			return resp, fmt.Errorf("read service %s: %w", name, err)
		}
		changed := false
		if svc.ErrorControl != winos.ErrorControlNormal {
			if err := w.SetErrorControl(name, winos.ErrorControlNormal); err != nil {
				return resp, fmt.Errorf("set service %s's error control to Normal: %w", name, err)
			}
			changed = true
		}
		have, err := w.Recovery(name)
		switch {
		case errors.Is(err, winos.ErrInvalidLevel):
			resp.NotSupported = append(resp.NotSupported, fmt.Sprintf("restart actions of %s: this system cannot report a service's failure actions (%v): not set", name, err))
		case err != nil:
			return resp, fmt.Errorf("read service %s's failure actions: %w", name, err)
		case !sameRecovery(have, want):
			if err := w.SetRecovery(name, want); err != nil {
				return resp, fmt.Errorf("give service %s its restart actions: %w", name, err)
			}
			changed = true
		}
		if changed {
			resp.Services = append(resp.Services, name)
		}
	}
	return resp, nil
}

// joinRules creates the rules that are missing and enables those that
// are off, and returns their names; why says why this system cannot.
func joinRules(ctx context.Context, w winos.OS, rules []ops.JoinFirewallRule) (changed []string, why string, err error) {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.Name
	}
	have, err := w.FirewallRules(ctx, names)
	if why := noPowerShell(err); why != "" {
		return nil, why, nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read the firewall rules %v: %w", names, err)
	}
	for i, r := range rules {
		switch {
		case have[i].Exists && have[i].Enabled:
			continue
		case have[i].Exists:
			if err := w.SetFirewallRules(ctx, []string{r.Name}, true); err != nil {
				return changed, "", fmt.Errorf("enable the firewall rule %s: %w", r.Name, err)
			}
		default:
			spec := winos.FirewallRuleSpec{Name: r.Name, DisplayName: r.DisplayName, Direction: "Inbound", Protocol: "TCP", LocalPort: r.Port}
			if err := w.CreateFirewallRule(ctx, spec); err != nil {
				return changed, "", fmt.Errorf("create the firewall rule %s (inbound TCP %d): %w", r.Name, r.Port, err)
			}
		}
		changed = append(changed, r.Name)
	}
	return changed, "", nil
}

// joinRemoveRules deletes the join's firewall rules; a system without
// Windows PowerShell has none of them to remove.
func joinRemoveRules(ctx context.Context, w winos.OS) ([]string, error) {
	removed, err := w.RemoveFirewallRules(ctx, []string{ops.JoinRuleKubelet.Name, ops.JoinRuleKubeProxy.Name})
	if noPowerShell(err) != "" {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("remove the firewall rules of the join: %w", err)
	}
	return removed, nil
}

// joinPorts lists the rules' ports for a message.
func joinPorts(rules []ops.JoinFirewallRule) string {
	var out string
	for i, r := range rules {
		if i > 0 {
			out += " and "
		}
		out += fmt.Sprint(r.Port)
	}
	return out
}
