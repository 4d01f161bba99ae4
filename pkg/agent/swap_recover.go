package agent

import (
	"context"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// swapRecoverStartLimit is how long swap-recover waits for each service
// to reach Running.
const swapRecoverStartLimit = 60 * time.Second

// swapRecover repairs a swap that was interrupted (connection lost, swdt
// killed): where a destination is missing but its backup exists, the
// backup is put back; staged files are removed; the listed services are
// started. A service that will not start is reported, not an error.
func swapRecover(ctx context.Context, w winos.OS, req ops.SwapRecoverRequest) (ops.SwapRecoverResponse, error) {
	resp := ops.SwapRecoverResponse{Restored: []string{}, Started: []string{}, NotStarted: []ops.ServiceProblem{}}
	for _, it := range req.Items {
		_, hasDest, err := provisionStatFile(w, it.Destination)
		if err != nil {
			return resp, err
		}
		_, hasBackup, err := provisionStatFile(w, it.Backup)
		if err != nil {
			return resp, err
		}
		if !hasDest && hasBackup {
			if err := w.Rename(it.Backup, it.Destination); err != nil {
				return resp, err
			}
			resp.Restored = append(resp.Restored, it.Destination)
		}
		_, hasStaged, err := provisionStatFile(w, it.Staged)
		if err != nil {
			return resp, err
		}
		if hasStaged {
			if err := w.Remove(it.Staged); err != nil {
				return resp, err
			}
		}
	}
	for _, name := range req.Start {
		if svc, err := w.Service(name); err == nil && svc.Status == winos.StatusRunning {
			continue
		}
		why, err := swapStart(ctx, w, name, swapRecoverStartLimit)
		if err != nil {
			return resp, err
		}
		if why != "" {
			resp.NotStarted = append(resp.NotStarted, ops.ServiceProblem{Service: name, Error: why})
			continue
		}
		resp.Started = append(resp.Started, name)
	}
	return resp, nil
}
