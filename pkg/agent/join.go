package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The ops of swdt join. The files are at fixed paths (ops.JoinFilePaths):
// a request names a file by role and carries only its content, so no
// request can make the agent write anywhere else.
var joinOps = []entry{
	handle(ops.JoinInspect, joinInspect),
	handle(ops.JoinWrite, joinWrite),
	handle(ops.JoinReset, joinReset),
	handle(ops.JoinFeature, joinFeature),
	handle(ops.JoinSetup, joinSetup),
}

// joinKubeconfigMax bounds the kubelet.conf join-inspect returns.
const joinKubeconfigMax = 1 << 20

func joinInspect(_ context.Context, w winos.OS, req ops.JoinInspectRequest) (ops.JoinInspectResponse, error) {
	var resp ops.JoinInspectResponse
	host, err := w.Hostname()
	if err != nil {
		return resp, fmt.Errorf("read the host name: %w", err)
	}
	resp.Hostname = host
	if resp.Unsafe, err = joinUnsafe(w, joinFolders(req.Containerd, req.CNI, ops.JoinLogs)); err != nil {
		return resp, err
	}
	// A kubeconfig another account wrote says nothing about the cluster
	// this node belongs to.
	owner, trusted, err := adminsOwn(w, ops.JoinKubeconfig)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return resp, err
	case !trusted:
		resp.Ignored = append(resp.Ignored, fmt.Sprintf("%s is owned by %s, not by Administrators or SYSTEM: not read; a join removes it", ops.JoinKubeconfig, owner))
	}
	conf, exists, err := winsReadFile(w, ops.JoinKubeconfig)
	if err != nil {
		return resp, err
	}
	if exists && trusted {
		if len(conf) > joinKubeconfigMax {
			return resp, Fail(ops.KindTooLarge, "%s is %d bytes, more than a kubeconfig can be (%d)", ops.JoinKubeconfig, len(conf), joinKubeconfigMax)
		}
		resp.Kubeconfig = string(conf)
	}
	for _, role := range joinRoles() {
		ok, err := winsFileExists(w, ops.JoinFilePaths[role])
		if err != nil {
			return resp, fmt.Errorf("look for %s: %w", ops.JoinFilePaths[role], err)
		}
		if ok {
			resp.Files = append(resp.Files, role)
		}
	}
	for _, name := range ops.JoinServices {
		_, err := w.Service(name)
		switch {
		case err == nil:
			resp.Services = append(resp.Services, name)
		case !winsNotFound(err):
			return resp, fmt.Errorf("read service %s: %w", name, err)
		}
	}
	return resp, nil
}

// joinRoles lists the join files in a fixed order.
func joinRoles() []ops.JoinFile {
	roles := make([]ops.JoinFile, 0, len(ops.JoinFilePaths))
	for r := range ops.JoinFilePaths {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	return roles
}

// joinWrite makes the join's folders safe (join_folders.go), removes
// unread what another account left at the names the join and the
// kubelet use, and writes each file whose bytes differ: beside it first,
// restricted to Administrators and SYSTEM (the bootstrap kubeconfig
// holds a token), then renamed into place.
func joinWrite(_ context.Context, w winos.OS, req ops.JoinWriteRequest) (ops.JoinWriteResponse, error) {
	var resp ops.JoinWriteResponse
	for role := range req.Files {
		if _, ok := ops.JoinFilePaths[role]; !ok {
			return resp, Fail(ops.KindBadRequest, "join-write: unknown file %q", role)
		}
	}
	for _, l := range req.Logs {
		if !slices.Contains(ops.JoinLogs, l) {
			return resp, Fail(ops.KindBadRequest, "join-write: %q is no log file of a join (%s)", l, strings.Join(ops.JoinLogs, ", "))
		}
	}
	_, containerd := req.Files[ops.JoinFileContainerdConfig]
	notes, err := secureJoinFolders(w, joinFolders(containerd, req.CNI, req.Logs))
	resp.Notes = notes
	if err != nil {
		return resp, err
	}
	untrusted := slices.Clone(joinKubeletFiles)
	for _, role := range joinRoles() {
		untrusted = append(untrusted, ops.JoinFilePaths[role], ops.WritingPath(ops.JoinFilePaths[role]))
	}
	for _, p := range untrusted {
		if err := discardUntrusted(w, p, &resp.Notes); err != nil {
			return resp, err
		}
	}
	for _, role := range joinRoles() {
		content, ok := req.Files[role]
		if !ok {
			continue
		}
		path := ops.JoinFilePaths[role]
		old, exists, err := winsReadFile(w, path)
		if err != nil {
			return resp, err
		}
		if exists && bytes.Equal(old, []byte(content)) {
			continue
		}
		staged := ops.WritingPath(path)
		if err := writeOwnFile(w, staged, []byte(content)); err != nil {
			return resp, err
		}
		if err := w.SetACL(staged, keysAdminOnly); err != nil {
			return resp, winsAlso(fmt.Errorf("restrict %s to Administrators and SYSTEM: %w", staged, err), winsRemoveQuietly(w, staged))
		}
		if exists {
			if err := removeFree(w, path); err != nil {
				return resp, winsAlso(fmt.Errorf("replace %s: %w", path, err), winsRemoveQuietly(w, staged))
			}
		}
		if err := w.Rename(staged, path); err != nil {
			return resp, winsAlso(fmt.Errorf("rename %s to %s: %w", staged, path, err), winsRemoveQuietly(w, staged))
		}
		resp.Changed = append(resp.Changed, role)
	}
	return resp, nil
}

// How long join-reset waits for a service to stop before it ends its
// process, and for its process to exit once it is Stopped.
const (
	joinStopLimit = 60 * time.Second
	joinExitLimit = 10 * time.Second
)

// joinReset stops and deletes each service, removes the join's firewall
// rules, ends the processes that still run a binary it removes
// (join_reset.go), then removes the join files, the kubelet's
// kubeconfig, and each binary with swdt's leftovers beside it; a binary
// a process still runs is reported in InUse and kept. Each step is
// idempotent.
func joinReset(ctx context.Context, w winos.OS, req ops.JoinResetRequest) (ops.JoinResetResponse, error) {
	resp := ops.JoinResetResponse{Removed: []string{}}
	if len(req.Services) == 0 {
		return resp, Fail(ops.KindBadRequest, "join-reset needs the services to remove")
	}
	files := []string{ops.JoinKubeconfig}
	for _, role := range joinRoles() {
		files = append(files, ops.JoinFilePaths[role])
	}
	for _, s := range req.Services {
		if s.Name == "" || s.Binary == "" {
			return resp, Fail(ops.KindBadRequest, "join-reset needs each service's name and binary path")
		}
		deleted, err := joinDeleteService(ctx, w, s.Name)
		if err != nil {
			return resp, err
		}
		if deleted {
			resp.Deleted = append(resp.Deleted, s.Name)
		}
		found, err := withLeftovers(w, s.Binary)
		if err != nil {
			return resp, err
		}
		files = append(files, found...)
	}
	for _, f := range req.Files {
		if f == "" {
			return resp, Fail(ops.KindBadRequest, "join-reset: a file to remove needs its path")
		}
		found, err := withLeftovers(w, f)
		if err != nil {
			return resp, err
		}
		files = append(files, found...)
	}
	rules, err := joinRemoveRules(ctx, w)
	if err != nil {
		return resp, err
	}
	for _, r := range rules {
		resp.Removed = append(resp.Removed, "firewall rule "+r)
	}
	ended, inUse, err := joinEndRunners(ctx, w, files)
	if err != nil {
		return resp, err
	}
	resp.Ended, resp.InUse = ended, inUse
	for _, f := range files {
		if joinInUse(resp.InUse, f) {
			continue
		}
		ok, err := winsFileExists(w, f)
		if err != nil {
			return resp, fmt.Errorf("look for %s: %w", f, err)
		}
		if !ok {
			continue
		}
		if err := w.Remove(f); err != nil {
			return resp, fmt.Errorf("remove %s: %w", f, err)
		}
		resp.Removed = append(resp.Removed, f)
	}
	return resp, nil
}

// joinDeleteService stops and deletes a service; a missing one is fine.
func joinDeleteService(ctx context.Context, w winos.OS, name string) (bool, error) {
	_, err := w.Service(name)
	switch {
	case winsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read service %s: %w", name, err)
	}
	if err := joinStop(ctx, w, name); err != nil {
		return false, err
	}
	res, err := winsExec(ctx, w, winsLimits.call, "sc.exe", "delete", name)
	if err != nil {
		return false, err
	}
	switch winos.Errno(res.ExitCode) {
	case 0, winos.ErrServiceMarkedForDelete, winos.ErrServiceDoesNotExist:
		return true, nil
	}
	return false, Fail(ops.KindUnregisterFailed, "could not delete service %s: sc.exe delete exited %d: %s", name, res.ExitCode, winsOutput(res))
}

// joinStop stops a service and waits until it is Stopped and its
// process has exited (which frees its binary), ending the process when
// the service does not stop within joinStopLimit or the process outlives
// the stop by joinExitLimit.
func joinStop(ctx context.Context, w winos.OS, name string) error {
	p := &stopper{w: w, limit: joinStopLimit, exit: joinExitLimit, interval: 200 * time.Millisecond}
	return p.stop(ctx, name)
}
