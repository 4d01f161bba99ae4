package node

import (
	"context"

	"sigs.k8s.io/swdt/pkg/pwsh"
	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

// SetupFacts gathers OS, account, RDP, Chocolatey and authorized-keys state
// in one op.
func (n *Node) SetupFacts(ctx context.Context) (ops.SetupFactsResponse, error) {
	return pwsh.Call(ctx, n.runner, ops.SetupFacts, ops.SetupFactsRequest{FirewallRules: ops.RDPFirewallRules})
}

// SetRDP turns Remote Desktop and its firewall rules on or off and returns
// the state read back.
func (n *Node) SetRDP(ctx context.Context, enable bool) (ops.RDPState, error) {
	return pwsh.Call(ctx, n.runner, ops.RDPSet, ops.RDPSetRequest{Enable: enable, FirewallRules: ops.RDPFirewallRules})
}

// InstallChoco installs Chocolatey when it is missing.
func (n *Node) InstallChoco(ctx context.Context) (ops.ChocoState, error) {
	return pwsh.Call(ctx, n.runner, ops.ChocoInstall, ops.ChocoInstallRequest{})
}

// InstallPackages installs Chocolatey packages, one result per package.
func (n *Node) InstallPackages(ctx context.Context, packages []string) ([]ops.ChocoPackageResult, error) {
	resp, err := pwsh.Call(ctx, n.runner, ops.ChocoPackages, ops.ChocoPackagesRequest{Packages: packages})
	return resp.Results, err
}

// AddAuthorizedKeys appends missing keys to administrators_authorized_keys
// and restricts its ACL.
func (n *Node) AddAuthorizedKeys(ctx context.Context, keys []string) (ops.AuthorizedKeysState, error) {
	return pwsh.Call(ctx, n.runner, ops.AuthorizedKeysAdd, ops.AuthorizedKeysAddRequest{Keys: keys})
}
