package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// winsInspect reads the rancher-wins service, wins' config file and the
// rancher-wins-* processes wins started on the host.
func winsInspect(_ context.Context, w winos.OS, req ops.WinsInspectRequest) (ops.WinsInspectResponse, error) {
	if req.ConfigPath == "" {
		return ops.WinsInspectResponse{}, Fail(ops.KindBadRequest, "wins-inspect needs the config file's path")
	}
	svc, err := winsServiceInfo(w)
	if err != nil {
		return ops.WinsInspectResponse{}, err
	}
	resp := ops.WinsInspectResponse{Service: svc}
	content, exists, err := winsReadFile(w, req.ConfigPath)
	if err != nil {
		return ops.WinsInspectResponse{}, err
	}
	// The exact bytes, BOM included, so that swdt sees a file with a BOM
	// as different from the config it renders.
	resp.ConfigExists, resp.ConfigContent = exists, string(content)
	if resp.Orphans, err = winsOrphans(w); err != nil {
		return ops.WinsInspectResponse{}, err
	}
	return resp, nil
}

// winsReadFile reads a whole file; exists is false when it is missing.
func winsReadFile(w winos.OS, path string) (content []byte, exists bool, err error) {
	f, err := w.Open(path)
	if winsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	content, err = io.ReadAll(f)
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	return content, true, nil
}

// winsConfigWrite writes wins' config file when its bytes differ from the
// requested content (UTF-8 as given, no BOM added), keeping the previous
// file as <config>.swdt-bak. The new content is written beside the file
// and renamed into place, so wins never reads half a file.
func winsConfigWrite(_ context.Context, w winos.OS, req ops.WinsConfigWriteRequest) (ops.WinsConfigWriteResponse, error) {
	dir, name := winpath.Dir(req.Path), winpath.Base(req.Path)
	if dir == "" || name == "" || strings.HasSuffix(req.Path, `\`) || strings.HasSuffix(req.Path, "/") {
		return ops.WinsConfigWriteResponse{}, Fail(ops.KindBadRequest, "wins' config path %q is not a full path to a file", req.Path)
	}
	// wins' config says which programs wins may start as SYSTEM: its
	// folder is checked (and repaired) like a program's, before and
	// after it is made.
	note, err := secureProgramFolder(w, dir)
	if err != nil {
		return ops.WinsConfigWriteResponse{}, err
	}
	var notes []string
	if note != "" {
		notes = []string{note}
	}
	old, exists, err := winsReadFile(w, req.Path)
	if err != nil {
		return ops.WinsConfigWriteResponse{}, err
	}
	content := []byte(req.Content)
	if exists && bytes.Equal(old, content) {
		return ops.WinsConfigWriteResponse{Notes: notes}, nil
	}
	if err := w.MkdirAll(dir); err != nil {
		return ops.WinsConfigWriteResponse{}, fmt.Errorf("create %s: %w", dir, err)
	}
	if note == "" {
		if note, err = secureProgramFolder(w, dir); err != nil {
			return ops.WinsConfigWriteResponse{}, err
		}
		if note != "" {
			notes = []string{note}
		}
	}
	staged := ops.WritingPath(req.Path)
	if err := writeOwnFile(w, staged, content); err != nil {
		return ops.WinsConfigWriteResponse{}, err
	}
	resp := ops.WinsConfigWriteResponse{Changed: true, Notes: notes}
	if exists {
		resp.Backup = ops.BackupPath(req.Path)
		if err := winsSetAside(w, req.Path, resp.Backup); err != nil {
			return ops.WinsConfigWriteResponse{}, winsAlso(err, winsRemoveQuietly(w, staged))
		}
	}
	if err := w.Rename(staged, req.Path); err != nil {
		err = fmt.Errorf("rename %s to %s: %w", staged, req.Path, err)
		if exists {
			if rerr := w.Rename(resp.Backup, req.Path); rerr != nil {
				err = winsAlso(err, fmt.Errorf("put the previous config back from %s: %w", resp.Backup, rerr))
			}
		}
		return ops.WinsConfigWriteResponse{}, winsAlso(err, winsRemoveQuietly(w, staged))
	}
	return resp, nil
}

// winsSetAside renames path to backup, replacing an older backup: the
// previous file itself becomes the backup, bytes, times and ACL intact.
func winsSetAside(w winos.OS, path, backup string) error {
	if err := removeFree(w, backup); err != nil && !winsNotFound(err) {
		return fmt.Errorf("remove the old backup %s: %w", backup, err)
	}
	if err := w.Rename(path, backup); err != nil {
		return fmt.Errorf("keep %s as %s: %w", path, backup, err)
	}
	return nil
}

// winsRemoveQuietly removes a file of swdt's own that may not exist.
func winsRemoveQuietly(w winos.OS, path string) error {
	if err := w.Remove(path); err != nil && !winsNotFound(err) {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}
