package agent

import (
	"context"
	"fmt"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// winsUninstall removes wins: it stops the service for good (failure
// actions off, so that the stop's kill does not restart it), stops wins'
// host processes, unregisters the service, keeps the config as
// <config>.swdt-bak and deletes the binary with swdt's leftovers beside
// it. When it fails while the service is still registered, the service's
// failure actions are put back.
func winsUninstall(ctx context.Context, w winos.OS, req ops.WinsUninstallRequest) (ops.WinsUninstallResponse, error) {
	resp := ops.WinsUninstallResponse{Removed: []string{}, Stopped: []ops.Process{}}
	if req.Binary == "" || req.ConfigPath == "" {
		return resp, Fail(ops.KindBadRequest, "wins-uninstall needs the binary's and the config's paths")
	}
	_, err := w.Service(ops.WinsService)
	if err != nil && !winsNotFound(err) {
		return resp, fmt.Errorf("read service %s: %w", ops.WinsService, err)
	}
	registered := err == nil
	halt, err := winsStopService(ctx, w)
	if err != nil {
		return resp, winsAlso(err, halt.undo(w, false))
	}
	orphans, err := winsOrphans(w)
	if err == nil {
		// One that does not exit locks only its own rancher-wins-* image,
		// which uninstall leaves alone.
		_, err = winsKill(ctx, w, orphans)
	}
	if err != nil {
		return resp, winsAlso(err, halt.undo(w, false))
	}
	resp.Stopped = orphans
	if registered {
		if err := winsUnregister(ctx, w, req.Binary); err != nil {
			return resp, winsAlso(err, halt.undo(w, false))
		}
		resp.ServiceRemoved = true
	}
	exists, err := winsFileExists(w, req.ConfigPath)
	if err != nil {
		return resp, fmt.Errorf("look for %s: %w", req.ConfigPath, err)
	}
	if exists {
		backup := ops.BackupPath(req.ConfigPath)
		if err := winsSetAside(w, req.ConfigPath, backup); err != nil {
			return resp, err
		}
		resp.ConfigBackup = backup
		resp.Removed = append(resp.Removed, req.ConfigPath)
	}
	files, err := withLeftovers(w, req.Binary)
	if err != nil {
		return resp, err
	}
	for _, f := range files {
		exists, err := winsFileExists(w, f)
		if err != nil {
			return resp, fmt.Errorf("look for %s: %w", f, err)
		}
		if !exists {
			continue
		}
		if err := w.Remove(f); err != nil {
			return resp, fmt.Errorf("remove %s: %w", f, err)
		}
		resp.Removed = append(resp.Removed, f)
	}
	return resp, nil
}

// winsUnregister deletes the stopped rancher-wins service: with wins.exe
// srv app run --unregister while the binary is there, and with sc.exe
// delete when that is not possible or did not work.
func winsUnregister(ctx context.Context, w winos.OS, binary string) error {
	why := binary + " does not exist"
	exists, err := winsFileExists(w, binary)
	if err != nil {
		return fmt.Errorf("look for %s: %w", binary, err)
	}
	if exists {
		args := []string{"srv", "app", "run", "--unregister"}
		res, err := winsExec(ctx, w, winsLimits.register, binary, args...)
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("unregister service %s: %w", ops.WinsService, ctx.Err())
		case err != nil:
			_, why = failureOf(err)
		default:
			why = fmt.Sprintf("%s exited %d: %s", winsCommandLine(binary, args), res.ExitCode, winsOutput(res))
		}
	}
	registered, err := winsRegistered(w)
	if err != nil || !registered {
		return err
	}
	args := []string{"delete", ops.WinsService}
	res, err := winsExec(ctx, w, winsLimits.call, "sc.exe", args...)
	if err != nil {
		_, msg := failureOf(err)
		return Fail(ops.KindUnregisterFailed, "could not delete service %s (%s): %s", ops.WinsService, why, msg)
	}
	// sc.exe exits with the Win32 error: the service is gone or goes once
	// the last handle to it closes.
	switch winos.Errno(res.ExitCode) {
	case 0, winos.ErrServiceMarkedForDelete, winos.ErrServiceDoesNotExist:
		return nil
	}
	return Fail(ops.KindUnregisterFailed, "could not delete service %s (%s): sc.exe delete exited %d: %s", ops.WinsService, why, res.ExitCode, winsOutput(res))
}
