package node

import (
	"context"

	"sigs.k8s.io/swdt/pkg/ops"
)

// SetupFacts gathers OS, account, RDP, Chocolatey and authorized-keys state
// in one op.
func (n *Node) SetupFacts(ctx context.Context) (ops.SetupFactsResponse, error) {
	return call(ctx, n, ops.SetupFacts, ops.SetupFactsRequest{FirewallRules: ops.RDPFirewallRules}, n.Timeouts.query())
}

// SetRDP turns Remote Desktop and its firewall rules on or off and returns
// the state read back.
func (n *Node) SetRDP(ctx context.Context, enable bool) (ops.RDPState, error) {
	return call(ctx, n, ops.RDPSet, ops.RDPSetRequest{Enable: enable, FirewallRules: ops.RDPFirewallRules}, n.Timeouts.query())
}

// InstallChoco installs Chocolatey when it is missing.
func (n *Node) InstallChoco(ctx context.Context) (ops.ChocoState, error) {
	return call(ctx, n, ops.ChocoInstall, ops.ChocoInstallRequest{}, n.Timeouts.install())
}

// InstallPackages installs Chocolatey packages, one result per package.
func (n *Node) InstallPackages(ctx context.Context, packages []string) ([]ops.ChocoPackageResult, error) {
	resp, err := call(ctx, n, ops.ChocoPackages, ops.ChocoPackagesRequest{Packages: packages}, n.Timeouts.install())
	return resp.Results, err
}

// AddAuthorizedKeys appends missing keys to administrators_authorized_keys
// and restricts its ACL.
func (n *Node) AddAuthorizedKeys(ctx context.Context, keys []string) (ops.AuthorizedKeysState, error) {
	return call(ctx, n, ops.AuthorizedKeysAdd, ops.AuthorizedKeysAddRequest{Keys: keys}, n.Timeouts.query())
}
