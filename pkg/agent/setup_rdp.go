package agent

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// Remote Desktop's registry keys (below HKLM).
const (
	rdpKey    = `System\CurrentControlSet\Control\Terminal Server`
	rdpTCPKey = rdpKey + `\WinStations\RDP-Tcp`
)

// rdpPolicySetting is where an administrator finds the Group Policy that
// writes fDenyTSConnections below ops.RDPPolicyKey.
const rdpPolicySetting = `"Allow users to connect remotely by using Remote Desktop Services" (Computer Configuration > ` +
	`Administrative Templates > Windows Components > Remote Desktop Services > Remote Desktop Session Host > Connections)`

// rdpState reads whether Remote Desktop accepts connections, with Group
// Policy's values overriding the local ones as Windows applies them, and
// the named firewall rules.
func rdpState(ctx context.Context, w winos.OS, rules []string) (ops.RDPState, error) {
	st := ops.RDPState{FirewallRules: []ops.FirewallRule{}}
	// Windows is installed with connections denied; a missing value keeps
	// that default.
	deny, ok, err := setupRegistry(w, rdpKey, "fDenyTSConnections")
	if err != nil {
		return st, err
	}
	st.Enabled = ok && deny.Number == 0
	nla, _, err := setupRegistry(w, rdpTCPKey, "UserAuthentication")
	if err != nil {
		return st, err
	}
	st.NLA = nla.Number == 1
	policyDeny, ok, err := setupRegistry(w, ops.RDPPolicyKey, "fDenyTSConnections")
	if err != nil {
		return st, err
	}
	if ok {
		st.Enabled = policyDeny.Number == 0
		st.BlockedByPolicy = !st.Enabled
		st.Message = rdpPolicyMessage(st.Enabled)
	}
	policyNLA, ok, err := setupRegistry(w, ops.RDPPolicyKey, "UserAuthentication")
	if err != nil {
		return st, err
	}
	if ok {
		st.NLA = policyNLA.Number == 1
	}
	found, err := rdpRules(ctx, w, rules)
	if err != nil {
		return st, err
	}
	for _, r := range found {
		st.FirewallRules = append(st.FirewallRules, ops.FirewallRule{Name: r.Name, Exists: r.Exists, Enabled: r.Exists && r.Enabled})
	}
	return st, nil
}

// rdpPolicyMessage says that Group Policy decides whether Remote Desktop
// is on, and how to change that.
func rdpPolicyMessage(enabled bool) string {
	if enabled {
		return fmt.Sprintf(`Group Policy keeps Remote Desktop on (HKLM\%s\fDenyTSConnections is 0: the policy %s is Enabled), `+
			"which overrides the local setting; to turn it off, have that policy changed (gpedit.msc, or the domain's Group Policy "+
			"Object), run gpupdate /force on the node, then run swdt setup again", ops.RDPPolicyKey, rdpPolicySetting)
	}
	return fmt.Sprintf(`Remote Desktop is blocked by Group Policy (HKLM\%s\fDenyTSConnections is 1: the policy %s is Disabled), `+
		"which overrides the local setting; have that policy set to Enabled or Not Configured (gpedit.msc, or the domain's Group Policy "+
		"Object), run gpupdate /force on the node, then run swdt setup again", ops.RDPPolicyKey, rdpPolicySetting)
}

// rdpSet turns Remote Desktop and its firewall rules on or off and reads
// the result back. Nothing is changed when Group Policy overrides the
// wanted state or a named rule is missing: either would leave RDP
// half-configured while reporting a change.
func rdpSet(ctx context.Context, w winos.OS, req ops.RDPSetRequest) (ops.RDPState, error) {
	if err := rdpCheckRuleNames(req.FirewallRules); err != nil {
		return ops.RDPState{}, err
	}
	policyDeny, ok, err := setupRegistry(w, ops.RDPPolicyKey, "fDenyTSConnections")
	if err != nil {
		return ops.RDPState{}, err
	}
	if ok && (policyDeny.Number == 0) != req.Enable {
		return ops.RDPState{}, Fail(ops.KindBlockedByPolicy, "%s", rdpPolicyMessage(policyDeny.Number == 0))
	}
	rules, err := rdpRules(ctx, w, req.FirewallRules)
	if err != nil {
		return ops.RDPState{}, err
	}
	var missing []string
	for _, r := range rules {
		if !r.Exists {
			missing = append(missing, r.Name)
		}
	}
	if len(missing) > 0 {
		return ops.RDPState{}, Fail(ops.KindNotFound, "firewall rule %s does not exist on this node: it comes with Windows and was deleted; "+
			"create it again (Remote Desktop listens on TCP and UDP port 3389, e.g. New-NetFirewallRule -Name %s -Direction Inbound "+
			"-Protocol TCP -LocalPort 3389 -Action Allow) and run swdt setup again", strings.Join(missing, ", "), missing[0])
	}
	deny := uint64(1)
	if req.Enable {
		deny = 0
	}
	if err := w.SetRegistryValue(rdpKey, winos.RegistryValue{Name: "fDenyTSConnections", Kind: winos.RegDWord, Number: deny}); err != nil {
		return ops.RDPState{}, fmt.Errorf(`set HKLM\%s\fDenyTSConnections: %w`, rdpKey, err)
	}
	if len(req.FirewallRules) > 0 {
		child, cancel := context.WithTimeout(ctx, setupLimits.query)
		defer cancel()
		if err := w.SetFirewallRules(child, req.FirewallRules, req.Enable); err != nil {
			if ctx.Err() == nil && child.Err() != nil {
				return ops.RDPState{}, Fail(ops.KindTimeout, "setting the firewall rules %s did not finish within %s",
					strings.Join(req.FirewallRules, ", "), setupLimits.query)
			}
			return ops.RDPState{}, fmt.Errorf("set firewall rules %s: %w", strings.Join(req.FirewallRules, ", "), err)
		}
	}
	return rdpState(ctx, w, req.FirewallRules)
}

// rdpRules reads the named firewall rules under the query time limit (the
// real layer may ask PowerShell).
func rdpRules(ctx context.Context, w winos.OS, names []string) ([]winos.FirewallRule, error) {
	if len(names) == 0 {
		return nil, nil
	}
	child, cancel := context.WithTimeout(ctx, setupLimits.query)
	defer cancel()
	rules, err := w.FirewallRules(child, names)
	if err != nil {
		if ctx.Err() == nil && child.Err() != nil {
			return nil, Fail(ops.KindTimeout, "reading the firewall rules %s did not finish within %s", strings.Join(names, ", "), setupLimits.query)
		}
		return nil, fmt.Errorf("read firewall rules %s: %w", strings.Join(names, ", "), err)
	}
	if len(rules) != len(names) {
		return nil, fmt.Errorf("read firewall rules %s: got %d results for %d names", strings.Join(names, ", "), len(rules), len(names))
	}
	return rules, nil
}

// rdpCheckRuleNames refuses rule names that the firewall cmdlets would
// take as wildcard patterns (and so match other rules than the one
// named), and empty ones.
func rdpCheckRuleNames(names []string) error {
	for _, n := range names {
		if strings.TrimSpace(n) == "" || strings.ContainsAny(n, "*?[]`\r\n") {
			return Fail(ops.KindBadRequest, "%q is not a firewall rule name: names must be non-empty and hold no wildcard characters", n)
		}
	}
	return nil
}
