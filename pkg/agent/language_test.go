package agent_test

import (
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// On a node under WDAC or AppLocker (issue 22, item 8), setup's first op
// reports the language mode, and every script that Constrained Language
// mode allows runs: the firewall rules are read and set. Only the step
// that needs FullLanguage (Chocolatey's install) is refused, with kind
// constrained-language rather than a raw script error.
func TestSetupUnderConstrainedLanguage(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.LanguageMode = simnode.LanguageConstrained }))
	w := ts.Node().OS()
	facts, err := agent.Call(setupCtx(t), w, ops.SetupFacts, ops.SetupFactsRequest{FirewallRules: ops.RDPFirewallRules})
	if err != nil {
		t.Fatalf("setup-facts under ConstrainedLanguage: %v", err)
	}
	if facts.LanguageMode != simnode.LanguageConstrained || len(facts.RDP.FirewallRules) != len(ops.RDPFirewallRules) {
		t.Errorf("facts = %+v, want the language mode and both firewall rules", facts)
	}
	rdp, err := agent.Call(setupCtx(t), w, ops.RDPSet, ops.RDPSetRequest{Enable: true, FirewallRules: ops.RDPFirewallRules})
	if err != nil {
		t.Fatalf("rdp-set under ConstrainedLanguage: %v", err)
	}
	want := []ops.FirewallRule{{Name: ops.RDPFirewallRules[0], Exists: true, Enabled: true}, {Name: ops.RDPFirewallRules[1], Exists: true, Enabled: true}}
	if !rdp.Enabled || !reflect.DeepEqual(rdp.FirewallRules, want) {
		t.Errorf("rdp-set = %+v, want RDP on with both rules enabled", rdp)
	}
	_, err = agent.Call(setupCtx(t), w, ops.ChocoInstall, ops.ChocoInstallRequest{})
	setupWantFailure(t, err, ops.KindConstrainedLanguage, "ConstrainedLanguage", "WDAC", "Chocolatey's install script", "run swdt setup again")
}

// On a Constrained Language node the event log is read too: a rolled
// back item shows the service's events.
func TestSwapEventsUnderConstrainedLanguage(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.LanguageMode = simnode.LanguageConstrained }))
	n := ts.Node()
	resp, err := agent.Call(setupCtx(t), n.OS(), ops.ServiceSwap, swapKubeletRequest(swapStage(t, n, "kubelet", swapKubelet, []byte("MZ "+simnode.MarkerCrashOnStart))))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 1 || resp.Items[0].Result != ops.SwapResultRolledBack {
		t.Fatalf("resp = %+v, want kubelet rolled back", resp)
	}
	if ev := resp.Items[0].Events; len(ev) == 0 || strings.Contains(ev[0], "could not be read") || !strings.Contains(ev[0], "terminated unexpectedly") {
		t.Errorf("events = %q, want the service's events", ev)
	}
}
