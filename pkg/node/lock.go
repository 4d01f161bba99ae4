package node

import (
	"context"

	"sigs.k8s.io/swdt/pkg/ops"
)

// RenewLock renews the run's lock and, when staged is not nil, records
// the files it stages.
func (n *Node) RenewLock(ctx context.Context, runID string, staged []string) error {
	_, err := call(ctx, n, ops.NodeLockRenew, ops.NodeLockRenewRequest{RunID: runID, Staged: staged}, n.Timeouts.query())
	return err
}

// Unlock releases the run's lock.
func (n *Node) Unlock(ctx context.Context, runID string) error {
	_, err := call(ctx, n, ops.NodeUnlock, ops.NodeUnlockRequest{RunID: runID}, n.Timeouts.query())
	return err
}
