package node

import (
	"context"
	"io"

	"sigs.k8s.io/swdt/pkg/ops"
)

// InspectProvision reads destinations and the services that run them (and
// their dependents) in one op.
func (n *Node) InspectProvision(ctx context.Context, targets []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error) {
	return call(ctx, n, ops.ProvisionInspect, ops.ProvisionInspectRequest{Targets: targets}, n.Timeouts.hash())
}

// InspectLocked takes the node's swap lock for lock's owner and, when it
// did, inspects targets under it, in one op. A lock held by another run
// is reported in the response's Locked, and nothing else is read.
func (n *Node) InspectLocked(ctx context.Context, lock ops.NodeLockRequest, targets []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error) {
	return call(ctx, n, ops.ProvisionInspect, ops.ProvisionInspectRequest{Targets: targets, Lock: &lock}, n.Timeouts.hash())
}

// RemoveFiles deletes files on the node; missing ones are skipped.
func (n *Node) RemoveFiles(ctx context.Context, paths []string) ([]string, error) {
	resp, err := call(ctx, n, ops.FilesRemove, ops.FilesRemoveRequest{Paths: paths}, n.Timeouts.query())
	return resp.Removed, err
}

// SwapServices runs one swap transaction on the node.
func (n *Node) SwapServices(ctx context.Context, req ops.ServiceSwapRequest) (ops.ServiceSwapResponse, error) {
	return call(ctx, n, ops.ServiceSwap, req, SwapBudget(req))
}

// SwapServicesAttached is SwapServices with attachments after the
// request on the op's input: the encoded uploads of its Attached items,
// in order, as ops.WriteAttachment writes them.
func (n *Node) SwapServicesAttached(ctx context.Context, req ops.ServiceSwapRequest, attachments io.Reader) (ops.ServiceSwapResponse, error) {
	return callWith(ctx, n, ops.ServiceSwap, req, attachments, SwapBudget(req))
}

// RecoverSwap finishes or rolls back the node's unfinished swap (its
// journal), and removes the request's staged files.
func (n *Node) RecoverSwap(ctx context.Context, req ops.SwapRecoverRequest) (ops.SwapRecoverResponse, error) {
	return call(ctx, n, ops.SwapRecover, req, n.Timeouts.service())
}

// RegisterService creates a stopped service that runs a program already on
// the node.
func (n *Node) RegisterService(ctx context.Context, req ops.ServiceRegisterRequest) (ops.ServiceRegisterResponse, error) {
	return call(ctx, n, ops.ServiceRegister, req, n.Timeouts.service())
}

// ConfigureService brings an existing service's command line, start
// type, display name and dependencies in line with req, without
// restarting it.
func (n *Node) ConfigureService(ctx context.Context, req ops.ServiceRegisterRequest) (ops.ServiceConfigureResponse, error) {
	return call(ctx, n, ops.ServiceConfigure, req, n.Timeouts.service())
}

// UndoSwap puts back the binaries an earlier swap replaced (swap-undo),
// under the node's lock, which the op takes and releases itself.
func (n *Node) UndoSwap(ctx context.Context, req ops.SwapUndoRequest) (ops.ServiceSwapResponse, error) {
	return call(ctx, n, ops.SwapUndo, req, SwapBudget(req.Swap())+n.Timeouts.hash())
}
