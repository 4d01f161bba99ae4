package agent_test

import (
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
