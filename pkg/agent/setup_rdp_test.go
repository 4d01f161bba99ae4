package agent_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

func TestRDPSet(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	ctx := setupCtx(t)
	w := ts.Node().OS()
	for _, enable := range []bool{true, false, true} {
		st, err := agent.Call(ctx, w, ops.RDPSet, ops.RDPSetRequest{Enable: enable, FirewallRules: ops.RDPFirewallRules})
		if err != nil {
			t.Fatal(err)
		}
		if st.Enabled != enable || !st.NLA || st.BlockedByPolicy || len(st.FirewallRules) != 2 {
			t.Fatalf("enable=%v: state %+v", enable, st)
		}
		for _, rule := range st.FirewallRules {
			if !rule.Exists || rule.Enabled != enable {
				t.Errorf("enable=%v: rule %+v", enable, rule)
			}
			if got, _ := ts.Node().FirewallRule(rule.Name); got.Enabled != enable {
				t.Errorf("enable=%v: node's rule %s enabled = %v", enable, rule.Name, got.Enabled)
			}
		}
		deny, _ := ts.Node().RegistryValue(simnode.KeyTerminalServer, "fDenyTSConnections")
		if (deny.Number == 0) != enable || deny.Kind != "DWord" {
			t.Errorf("enable=%v: fDenyTSConnections = %+v", enable, deny)
		}
	}
	if shadow, _ := ts.Node().FirewallRule("RemoteDesktop-Shadow-In-TCP"); shadow.Enabled {
		t.Error("a rule that was not named was enabled")
	}
}

// TestRDPSetChangesNothingItCannotFinish covers the requests rdp-set must
// refuse before touching the registry or a rule: a rule that does not
// exist (unknown, or a built-in one someone deleted), a wildcard name, and
// a Group Policy that overrides the wanted state.
func TestRDPSetChangesNothingItCannotFinish(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		prepare func(t *testing.T, n *simnode.Node)
		req     ops.RDPSetRequest
		kind    ops.Kind
		message []string
	}{
		{name: "unknown rule", req: ops.RDPSetRequest{Enable: true, FirewallRules: append(append([]string(nil), ops.RDPFirewallRules...), "No-Such-Rule")},
			kind: "not-found", message: []string{"No-Such-Rule", "does not exist"}},
		{name: "deleted built-in rule", req: ops.RDPSetRequest{Enable: true, FirewallRules: ops.RDPFirewallRules},
			prepare: func(t *testing.T, n *simnode.Node) {
				if err := n.Update(func(s *simnode.State) error {
					delete(s.Firewall, "remotedesktop-usermode-in-udp")
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			},
			kind: "not-found", message: []string{"RemoteDesktop-UserMode-In-UDP", "run swdt setup again"}},
		{name: "wildcard rule name", req: ops.RDPSetRequest{Enable: true, FirewallRules: []string{"RemoteDesktop*"}},
			kind: "bad-request", message: []string{"RemoteDesktop*", "wildcard"}},
		{name: "blocked by Group Policy", req: ops.RDPSetRequest{Enable: true, FirewallRules: ops.RDPFirewallRules},
			prepare: func(t *testing.T, n *simnode.Node) { setRDPPolicy(t, n, 1) },
			kind:    ops.KindBlockedByPolicy, message: []string{"blocked by Group Policy", ops.RDPPolicyKey, "gpupdate /force", "run swdt setup again"}},
		{name: "kept on by Group Policy", req: ops.RDPSetRequest{Enable: false, FirewallRules: ops.RDPFirewallRules},
			prepare: func(t *testing.T, n *simnode.Node) {
				if err := n.SetRegistryDWord(simnode.KeyTerminalServer, "fDenyTSConnections", 0); err != nil {
					t.Fatal(err)
				}
				setRDPPolicy(t, n, 0)
			},
			kind: ops.KindBlockedByPolicy, message: []string{"Group Policy keeps Remote Desktop on", ops.RDPPolicyKey}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			if tc.prepare != nil {
				tc.prepare(t, n)
			}
			before := n.Snapshot()
			_, err := agent.Call(setupCtx(t), n.OS(), ops.RDPSet, tc.req)
			setupWantFailure(t, err, tc.kind, tc.message...)
			after := n.Snapshot()
			deny := func(s *simnode.State) int64 {
				return s.Registry[strings.ToLower(simnode.KeyTerminalServer)].Values["fdenytsconnections"].Number
			}
			if deny(after) != deny(before) {
				t.Errorf("fDenyTSConnections changed from %d to %d", deny(before), deny(after))
			}
			for name, r := range after.Firewall {
				if r.Enabled != before.Firewall[name].Enabled {
					t.Errorf("rule %s changed to enabled=%v", r.Name, r.Enabled)
				}
			}
		})
	}
}

func TestRDPStateUnderGroupPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		local       uint32
		policy      int // -1: no policy value
		policyNLA   int
		wantEnabled bool
		wantBlocked bool
		wantNLA     bool
		wantMessage string
	}{
		{name: "no policy", local: 0, policy: -1, policyNLA: -1, wantEnabled: true, wantNLA: true},
		{name: "policy denies", local: 0, policy: 1, policyNLA: -1, wantBlocked: true, wantNLA: true, wantMessage: "blocked by Group Policy"},
		{name: "policy allows", local: 1, policy: 0, policyNLA: -1, wantEnabled: true, wantNLA: true, wantMessage: "keeps Remote Desktop on"},
		{name: "policy turns NLA off", local: 0, policy: -1, policyNLA: 0, wantEnabled: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			if err := n.SetRegistryDWord(simnode.KeyTerminalServer, "fDenyTSConnections", tc.local); err != nil {
				t.Fatal(err)
			}
			if tc.policy >= 0 {
				setRDPPolicy(t, n, uint32(tc.policy))
			}
			if tc.policyNLA >= 0 {
				if err := n.SetRegistryDWord(simnode.KeyRDPPolicy, "UserAuthentication", uint32(tc.policyNLA)); err != nil {
					t.Fatal(err)
				}
			}
			facts, err := agent.Call(setupCtx(t), n.OS(), ops.SetupFacts, ops.SetupFactsRequest{FirewallRules: ops.RDPFirewallRules})
			if err != nil {
				t.Fatal(err)
			}
			st := facts.RDP
			if st.Enabled != tc.wantEnabled || st.BlockedByPolicy != tc.wantBlocked || st.NLA != tc.wantNLA {
				t.Errorf("rdp = %+v, want enabled=%v blocked=%v nla=%v", st, tc.wantEnabled, tc.wantBlocked, tc.wantNLA)
			}
			if (tc.wantMessage == "") != (st.Message == "") || !strings.Contains(st.Message, tc.wantMessage) {
				t.Errorf("message = %q, want one holding %q", st.Message, tc.wantMessage)
			}
		})
	}
}

// TestRDPSetAgreeingWithGroupPolicy: a policy that wants what is asked
// does not stop rdp-set, and the state read back says who decides.
func TestRDPSetAgreeingWithGroupPolicy(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	setRDPPolicy(t, n, 1)
	st, err := agent.Call(setupCtx(t), n.OS(), ops.RDPSet, ops.RDPSetRequest{Enable: false, FirewallRules: ops.RDPFirewallRules})
	if err != nil {
		t.Fatal(err)
	}
	if st.Enabled || !st.BlockedByPolicy || !strings.Contains(st.Message, "Group Policy") {
		t.Errorf("state = %+v, want off and blocked by policy", st)
	}
}

// setRDPPolicy writes Group Policy's fDenyTSConnections.
func setRDPPolicy(t *testing.T, n *simnode.Node, deny uint32) {
	t.Helper()
	if err := n.SetRegistryDWord(simnode.KeyRDPPolicy, "fDenyTSConnections", deny); err != nil {
		t.Fatal(err)
	}
}
