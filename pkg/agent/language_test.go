package agent_test

import (
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// On a node under WDAC or AppLocker, setup's first op names the language
// mode (issue 22, item 8) instead of failing with the firewall script's
// raw error.
func TestSetupFactsConstrainedLanguage(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.LanguageMode = simnode.LanguageConstrained }))
	_, err := agent.Call(setupCtx(t), ts.Node().OS(), ops.SetupFacts, ops.SetupFactsRequest{FirewallRules: ops.RDPFirewallRules})
	setupWantFailure(t, err, ops.KindConstrainedLanguage, "ConstrainedLanguage", "WDAC", "firewall rules", "run swdt setup again")
}

// On a Constrained Language node the event log cannot be read: a rolled
// back item says so instead of showing no events.
func TestSwapEventsUnreadableUnderConstrainedLanguage(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.LanguageMode = simnode.LanguageConstrained }))
	n := ts.Node()
	resp, err := agent.Call(setupCtx(t), n.OS(), ops.ServiceSwap, swapKubeletRequest(swapStage(t, n, "kubelet", swapKubelet, []byte("MZ "+simnode.MarkerCrashOnStart))))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 1 || resp.Items[0].Result != ops.SwapResultRolledBack {
		t.Fatalf("resp = %+v, want kubelet rolled back", resp)
	}
	if ev := resp.Items[0].Events; len(ev) != 1 || !strings.Contains(ev[0], "could not be read") || !strings.Contains(ev[0], "language mode") {
		t.Errorf("events = %q, want a note that the event log could not be read", ev)
	}
}
