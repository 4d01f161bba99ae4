package node

import (
	"context"

	"sigs.k8s.io/swdt/pkg/ops"
)

// InspectJoin reads the node's host name and its join files, and checks
// the folders the request names.
func (n *Node) InspectJoin(ctx context.Context, req ops.JoinInspectRequest) (ops.JoinInspectResponse, error) {
	return call(ctx, n, ops.JoinInspect, req, n.Timeouts.query())
}

// WriteJoinFiles makes the join's folders safe and writes the join files
// whose content differs.
func (n *Node) WriteJoinFiles(ctx context.Context, req ops.JoinWriteRequest) (ops.JoinWriteResponse, error) {
	return call(ctx, n, ops.JoinWrite, req, n.Timeouts.query())
}

// ResetJoin stops and deletes the kubelet service and removes what swdt
// join put on the node.
func (n *Node) ResetJoin(ctx context.Context, req ops.JoinResetRequest) (ops.JoinResetResponse, error) {
	return call(ctx, n, ops.JoinReset, req, n.Timeouts.service())
}
