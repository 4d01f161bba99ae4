package ops

// SwapUndo puts back the binaries an earlier swap replaced, from the
// backups that swap kept (Destination + ".swdt-bak"): the swap op run the
// other way, with the backup as the binary to put in place and the binary
// being undone kept as Destination + ".swdt-failed". swdt kubernetes runs
// it when the cluster does not confirm a kubelet swap (DESIGN.md §4.3).
var SwapUndo = register[SwapUndoRequest, ServiceSwapResponse]("swap-undo")

// SwapUndoItem is one binary to put back.
type SwapUndoItem struct {
	// Service is fed by the binary.
	Service string `json:"service"`
	// Destination is where the service runs the binary from. It must
	// still hold SHA256, the binary being undone, else nothing changes.
	Destination string `json:"destination"`
	// SHA256 is the digest of the binary being undone (what the swap put
	// at Destination).
	SHA256 string `json:"sha256"`
	// Backup is the old binary the swap kept; it must have BackupSHA256.
	Backup       string `json:"backup"`
	BackupSHA256 string `json:"backupSha256"`
	// HealthChecks must pass after the service starts again.
	HealthChecks []HealthCheckSpec `json:"healthChecks"`
}

// SwapUndoRequest asks to put back the old binaries of Items. The op
// takes the node's lock for Lock's owner, checks every destination and
// backup before anything stops, swaps as service-swap does (journal,
// stop order, settle, health checks) but never rolls the undo back, and
// releases the lock.
type SwapUndoRequest struct {
	// Lock is the lock the op takes for its run, and releases at its end.
	Lock NodeLockRequest `json:"lock"`
	// Items are the binaries to put back.
	Items []SwapUndoItem `json:"items"`
	// StopOrder lists services to stop, dependents first (running
	// dependents left out are stopped too, and started again).
	StopOrder []string `json:"stopOrder"`
	// StartOrder lists services to start, dependencies first.
	StartOrder []string `json:"startOrder"`
	// The timings, as in ServiceSwapRequest.
	StopTimeoutMs   int `json:"stopTimeoutMs"`
	StartTimeoutMs  int `json:"startTimeoutMs"`
	SettleMs        int `json:"settleMs"`
	HealthTimeoutMs int `json:"healthTimeoutMs"`
}

// Swap returns the service-swap request that undoes req: each backup is
// the staged binary, and the binary being undone goes to .swdt-failed.
func (req SwapUndoRequest) Swap() ServiceSwapRequest {
	out := ServiceSwapRequest{
		Owner: req.Lock.Owner, StopOrder: req.StopOrder, StartOrder: req.StartOrder,
		StopTimeoutMs: req.StopTimeoutMs, StartTimeoutMs: req.StartTimeoutMs, SettleMs: req.SettleMs, HealthTimeoutMs: req.HealthTimeoutMs,
		Unlock: true, Undo: true,
	}
	for _, it := range req.Items {
		out.Items = append(out.Items, SwapItem{
			Service: it.Service, Destination: it.Destination, Staged: it.Backup, Backup: FailedPath(it.Destination),
			SHA256: it.BackupSHA256, OldSHA256: it.SHA256, HealthChecks: it.HealthChecks,
		})
	}
	return out
}
