package agent

import (
	"context"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The swap-undo op puts back the binaries an earlier swap replaced, from
// the backups it kept (swdt kubernetes runs it when the cluster does not
// confirm a kubelet swap). It is the swap op run the other way: each
// backup is the binary to put in place (its digest checked), and the
// binary being undone is kept as .swdt-failed. It takes the node's lock
// for its own run, refuses before anything stops when a destination no
// longer holds the binary to undo (another run swapped since) or its
// backup is not the old binary, writes the swap's journal (a repair of it
// keeps the backup), and never rolls the undo itself back: when the old
// binary does not start either, the item fails and says so.

// undoOps are the handlers of the undo op.
var undoOps = []entry{
	handle(ops.SwapUndo, swapUndo),
}

// swapUndo runs one undo (see the top of this file).
func swapUndo(ctx context.Context, w winos.OS, req ops.SwapUndoRequest) (ops.ServiceSwapResponse, error) {
	locked, err := nodeLock(ctx, w, req.Lock)
	if err != nil {
		return ops.ServiceSwapResponse{}, err
	}
	if !locked.Acquired {
		owner := "another run"
		if locked.Holder != nil {
			owner = locked.Holder.Owner.String()
		}
		return ops.ServiceSwapResponse{}, Fail(ops.KindLocked, "the node is locked by %s; nothing was rolled back", owner)
	}
	// The swap releases the lock when it is done; this covers its failures.
	defer func() { _, _ = nodeUnlock(ctx, w, ops.NodeUnlockRequest{RunID: req.Lock.Owner.RunID}) }()
	for _, it := range req.Items {
		if err := undoCheck(w, it); err != nil {
			return ops.ServiceSwapResponse{}, err
		}
	}
	resp, err := serviceSwap(ctx, w, req.Swap(), nil)
	for i := range resp.Items {
		if resp.Items[i].Result == ops.SwapResultSwapped {
			resp.Items[i].Result = ops.SwapResultRolledBack
		}
	}
	return resp, err
}

// undoCheck makes sure, before anything stops, that its destination
// holds the binary to undo and its backup the old one.
func undoCheck(w winos.OS, it ops.SwapUndoItem) error {
	dest, err := provisionFileFacts(w, it.Destination, false, nil)
	if err != nil {
		return err
	}
	if !dest.Exists || !strings.EqualFold(dest.SHA256, it.SHA256) {
		return Fail(ops.KindChanged, "%s no longer holds the binary to roll back (SHA-256 %s, found %s): another run replaced it; nothing was rolled back", it.Destination, short(it.SHA256), short(dest.SHA256))
	}
	backup, err := provisionFileFacts(w, it.Backup, false, nil)
	if err != nil {
		return err
	}
	if !backup.Exists {
		return Fail(ops.KindNotFound, "there is no old binary to put back: %s is missing; nothing was rolled back", it.Backup)
	}
	if !strings.EqualFold(backup.SHA256, it.BackupSHA256) {
		return Fail(ops.KindChanged, "%s is not the binary the swap replaced (SHA-256 %s, want %s); nothing was rolled back", it.Backup, short(backup.SHA256), short(it.BackupSHA256))
	}
	return nil
}

// short is the first 12 hex digits of a digest, or "none".
func short(sha string) string {
	if sha == "" {
		return "none"
	}
	return sha[:min(12, len(sha))]
}
