package node

import (
	"context"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
)

// The Hyper-V ops, for a Node that is a Hyper-V host (pkg/vm reaches the
// host over SSH like a node, so the agent is delivered to it the same
// way). A failure the host reports is an *ops.Error of one of the kinds
// ops.KindNoHyperV, ops.KindVMNotFound, ...

// HyperVVMStatus reports a VM's state and checkpoints.
func (n *Node) HyperVVMStatus(ctx context.Context, req ops.HyperVVMRequest) (ops.HyperVVMInfo, error) {
	return call(ctx, n, ops.HyperVVMStatus, req, n.Timeouts.query())
}

// HyperVVMStart starts a VM (or resumes a paused one).
func (n *Node) HyperVVMStart(ctx context.Context, req ops.HyperVVMRequest) (ops.HyperVStartResponse, error) {
	return call(ctx, n, ops.HyperVVMStart, req, n.Timeouts.query())
}

// HyperVVMStop shuts a VM down, turning it off after req.TimeoutSeconds;
// it is bounded by that timeout plus the query timeout.
func (n *Node) HyperVVMStop(ctx context.Context, req ops.HyperVStopRequest) (ops.HyperVStopResponse, error) {
	return call(ctx, n, ops.HyperVVMStop, req, time.Duration(max(req.TimeoutSeconds, 0))*time.Second+n.Timeouts.query())
}

// HyperVCheckpointCreate takes a checkpoint of a VM.
func (n *Node) HyperVCheckpointCreate(ctx context.Context, req ops.HyperVCheckpointRequest) (ops.HyperVCheckpoint, error) {
	return call(ctx, n, ops.HyperVCheckpointCreate, req, n.Timeouts.query())
}

// HyperVCheckpointRestore applies a checkpoint and reports the VM
// afterwards.
func (n *Node) HyperVCheckpointRestore(ctx context.Context, req ops.HyperVCheckpointRequest) (ops.HyperVVMInfo, error) {
	return call(ctx, n, ops.HyperVCheckpointRestore, req, n.Timeouts.query())
}

// HyperVCheckpointList lists a VM's checkpoints, oldest first.
func (n *Node) HyperVCheckpointList(ctx context.Context, req ops.HyperVVMRequest) (ops.HyperVCheckpointsResponse, error) {
	return call(ctx, n, ops.HyperVCheckpointList, req, n.Timeouts.query())
}

// HyperVVMAddresses lists a VM's network adapters and their addresses.
func (n *Node) HyperVVMAddresses(ctx context.Context, req ops.HyperVVMRequest) (ops.HyperVAddressesResponse, error) {
	return call(ctx, n, ops.HyperVVMAddresses, req, n.Timeouts.query())
}
