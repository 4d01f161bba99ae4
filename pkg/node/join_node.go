package node

import (
	"context"

	"sigs.k8s.io/swdt/pkg/ops"
)

// JoinFeature reads the node's Containers feature and, when req asks,
// installs it (the node then needs a reboot).
func (n *Node) JoinFeature(ctx context.Context, req ops.JoinFeatureRequest) (ops.JoinFeatureResponse, error) {
	return call(ctx, n, ops.JoinFeature, req, n.Timeouts.install())
}

// JoinSetup creates the join's firewall rules and gives its services
// their restart actions and error control.
func (n *Node) JoinSetup(ctx context.Context, req ops.JoinSetupRequest) (ops.JoinSetupResponse, error) {
	return call(ctx, n, ops.JoinSetup, req, n.Timeouts.query())
}
