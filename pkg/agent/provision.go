package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// provisionOps are the handlers of the provision ops.
var provisionOps = []entry{
	handle(ops.ProvisionInspect, provisionInspect),
	handle(ops.FilesRemove, filesRemove),
	handleAttached(ops.ServiceSwap, serviceSwap),
	handle(ops.SwapRecover, swapRecover),
	handle(ops.ServiceRegister, serviceRegister),
	handle(ops.ServiceConfigure, serviceConfigure),
}

// provisionInspect reads what the plan needs in one round trip: each
// destination (and whether its directory exists), and each target service
// with every service that depends on it, transitively (the plan must stop
// those first); and the node's swap lock and unfinished swap, if any.
// With a lock request it takes the lock first, and reads nothing else
// while another run holds it.
func provisionInspect(ctx context.Context, w winos.OS, req ops.ProvisionInspectRequest) (ops.ProvisionInspectResponse, error) {
	resp := ops.ProvisionInspectResponse{Files: []ops.FileInfo{}, Services: []ops.ServiceInfo{}}
	if req.Lock != nil {
		locked, err := nodeLock(ctx, w, *req.Lock)
		if err != nil {
			return resp, err
		}
		resp.Locked = &locked
		if !locked.Acquired {
			return resp, nil
		}
	}
	arch, err := w.Arch()
	if err != nil {
		return resp, fmt.Errorf("read the processor architecture: %w", err)
	}
	resp.Arch = arch
	var queue []string
	for _, t := range req.Targets {
		info, err := provisionFileFacts(w, t.Destination, true, t.Known)
		if err != nil {
			return resp, err
		}
		resp.Files = append(resp.Files, info)
		if t.Service != "" { // "" feeds no service: a plain file push
			queue = append(queue, t.Service)
		}
		if info.Exists {
			continue
		}
		dir := winpath.Dir(winpath.Clean(t.Destination))
		if st, err := w.Stat(dir); err == nil && st.IsDir || slices.ContainsFunc(resp.MissingDirs, func(d string) bool { return strings.EqualFold(d, dir) }) {
			continue
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return resp, err
		}
		resp.MissingDirs = append(resp.MissingDirs, dir)
	}
	dests := make([]string, len(req.Targets))
	for i, t := range req.Targets {
		dests[i] = t.Destination
	}
	unsafe, err := programFolderProblems(w, programFolders(dests))
	if err != nil {
		return resp, err
	}
	resp.UnsafeFolders = unsafe
	services, err := serviceFacts(w, queue)
	if err != nil {
		return resp, err
	}
	resp.Services = services
	for i, t := range req.Targets {
		if t.Register == nil || t.Service == "" {
			continue
		}
		svc, err := w.Service(t.Service)
		if errors.Is(err, winos.ErrServiceDoesNotExist) {
			continue // registered by the run
		}
		if err != nil {
			return resp, fmt.Errorf("read service %s: %w", t.Service, err)
		}
		if drift := serviceDrift(svc, *t.Register); len(drift) > 0 {
			if resp.Drift == nil {
				resp.Drift, resp.Current = map[int][]string{}, map[int]ops.ServiceRegisterRequest{}
			}
			resp.Drift[i], resp.Current[i] = drift, currentConfig(svc)
		}
	}
	lock, err := lockRead(ctx, w)
	if err != nil {
		return resp, err
	}
	resp.Lock = lock
	j, err := journalRead(w, nil)
	if err != nil {
		return resp, err
	}
	if j != nil {
		live := lock != nil && !lock.Stale() && j.Owner.RunID != "" && lock.Owner.RunID == j.Owner.RunID
		resp.Unfinished = &ops.UnfinishedSwap{Journal: *j, InProgress: live}
	} else if req.Lock != nil {
		// This run holds the lock and no swap is unfinished: what an
		// earlier run staged and never swapped (it was interrupted, or
		// killed) is nobody's any more.
		if resp.RemovedLeftovers, err = removeStagedOfOthers(w, req.Targets, req.Lock.Owner.RunID); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

// removeStagedOfOthers removes the staged files (and their encoded and
// part uploads) of runs other than runID beside the targets'
// destinations that Administrators or SYSTEM own, and lists them. Only the lock's holder calls it, with no
// swap journal on the node: no other run can still use them.
func removeStagedOfOthers(w winos.OS, targets []ops.ProvisionTarget, runID string) ([]string, error) {
	var removed []string
	for _, t := range targets {
		dir := winpath.Dir(winpath.Clean(t.Destination))
		names, err := w.ReadDir(dir)
		if err != nil {
			if winsNotFound(err) {
				continue
			}
			return removed, fmt.Errorf("list %s: %w", dir, err)
		}
		for _, name := range names {
			full := winpath.Join(dir, name)
			staged := strings.TrimSuffix(strings.TrimSuffix(full, ops.PartPath("")), ops.EncodedPath(""))
			id, ok := ops.StagedRunID(staged, t.Destination)
			if !ok || id == runID {
				continue
			}
			// Only swdt's own: nothing another account could have
			// written is moved or deleted (docs/security.md).
			if _, own, err := adminsOwn(w, full); err != nil || !own {
				if err != nil && !errors.Is(err, fs.ErrNotExist) {
					return removed, err
				}
				continue
			}
			if err := w.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, fmt.Errorf("remove %s, which an earlier run staged: %w", full, err)
			}
			removed = append(removed, full)
		}
	}
	return removed, nil
}

// serviceFacts describes the services named and, transitively, every
// service that depends on one, each once, in the order met.
func serviceFacts(w winos.OS, names []string) ([]ops.ServiceInfo, error) {
	out := []ops.ServiceInfo{}
	queue := slices.Clone(names)
	seen := map[string]bool{}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if seen[strings.ToLower(name)] {
			continue
		}
		seen[strings.ToLower(name)] = true
		svc, err := w.Service(name)
		if errors.Is(err, winos.ErrServiceDoesNotExist) {
			out = append(out, ops.ServiceInfo{Name: name, DependsOn: []string{}, Dependents: []string{}})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read service %s: %w", name, err)
		}
		dependents, err := directDependents(w, svc.Name)
		if err != nil {
			return nil, fmt.Errorf("list the services that depend on %s: %w", svc.Name, err)
		}
		queue = append(queue, dependents...)
		executable, wrapper, via := serviceProgram(w, svc)
		if svc.ProcessExited {
			// The service control manager did not notice that its
			// process exited (Wine's does not): it is down.
			svc.Status, svc.PID = winos.StatusStopped, 0
		}
		out = append(out, ops.ServiceInfo{
			Name:       svc.Name,
			Exists:     true,
			Status:     string(svc.Status),
			StartType:  svc.StartType,
			PID:        svc.PID,
			BinaryPath: svc.CommandLine,
			Executable: executable,
			Wrapper:    wrapper,
			Via:        via,
			DependsOn:  provisionNonNil(svc.Dependencies),
			Dependents: provisionNonNil(dependents),
		})
	}
	return out, nil
}

// servicesChanged compares the services as a run planned with them
// (expect, from an earlier inspect) with the same services now, all but
// their PIDs, and says how they differ.
func servicesChanged(w winos.OS, expect []ops.ServiceInfo) ([]string, error) {
	names := make([]string, len(expect))
	for i, e := range expect {
		names[i] = e.Name
	}
	now, err := serviceFacts(w, names)
	if err != nil {
		return nil, err
	}
	byName := map[string]ops.ServiceInfo{}
	for _, s := range now {
		byName[strings.ToLower(s.Name)] = s
	}
	var changed []string
	for _, e := range expect {
		s := byName[strings.ToLower(e.Name)]
		e.PID, s.PID = 0, 0
		if !reflect.DeepEqual(e, s) {
			changed = append(changed, fmt.Sprintf("service %s is %s, the run planned with %s", e.Name, describeService(s), describeService(e)))
		}
		delete(byName, strings.ToLower(e.Name))
	}
	for _, s := range now {
		if _, extra := byName[strings.ToLower(s.Name)]; extra {
			changed = append(changed, fmt.Sprintf("service %s now depends on a service the run swaps", s.Name))
		}
	}
	return changed, nil
}

// filesChanged compares the files a run planned with (path, existence,
// size, last-write time) with the files as they are, and says what
// differs.
func filesChanged(w winos.OS, expect []ops.FileInfo) ([]string, error) {
	var changed []string
	for _, e := range expect {
		st, ok, err := provisionStatFile(w, e.Path)
		switch {
		case err != nil:
			return nil, err
		case !ok && e.Exists:
			changed = append(changed, e.Path+" is gone since swdt last saw it")
		case ok && !e.Exists:
			changed = append(changed, e.Path+" was created since swdt last saw it")
		case ok && (st.Size != e.Size || dotNetTicks(st.ModTime) != e.ModTicks):
			changed = append(changed, fmt.Sprintf("%s was written since swdt last saw it (%d bytes, the run planned with %d)", e.Path, st.Size, e.Size))
		}
	}
	return changed, nil
}

// describeService is a service's facts in a line.
func describeService(s ops.ServiceInfo) string {
	if !s.Exists {
		return "not registered"
	}
	return fmt.Sprintf("%s (%s, %q, depends on %v, needed by %v)", s.Status, s.StartType, s.BinaryPath, s.DependsOn, s.Dependents)
}

// directDependents lists the services whose own dependencies name svc:
// winos reports indirect dependents too, the inspect response only direct
// ones (the plan follows the chain itself).
func directDependents(w winos.OS, svc string) ([]string, error) {
	all, err := w.Dependents(svc)
	if err != nil {
		return nil, err
	}
	var direct []string
	for _, d := range all {
		info, err := w.Service(d)
		if errors.Is(err, winos.ErrServiceDoesNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read service %s: %w", d, err)
		}
		for _, dep := range info.Dependencies {
			if strings.EqualFold(dep, svc) {
				direct = append(direct, info.Name)
				break
			}
		}
	}
	sort.Strings(direct)
	return direct, nil
}

// provisionFileFacts describes the file at p; a missing path or a
// directory is reported as not existing. A known record whose size and
// last-write time still match supplies the digest without reading the
// file (rsync's quick check).
func provisionFileFacts(w winos.OS, p string, withVersion bool, known *ops.FileInfo) (ops.FileInfo, error) {
	facts := ops.FileInfo{Path: p}
	st, ok, err := provisionStatFile(w, p)
	if err != nil || !ok {
		return facts, err
	}
	facts.Exists, facts.Size, facts.ModTicks = true, st.Size, dotNetTicks(st.ModTime)
	if known != nil && known.SHA256 != "" && known.Size == facts.Size && known.ModTicks == facts.ModTicks {
		facts.SHA256, facts.Cached = known.SHA256, true
	} else if facts.SHA256, err = hashFile(w, p); err != nil {
		return facts, err
	}
	if withVersion {
		if facts.Version, err = w.FileVersion(p); err != nil {
			return facts, err
		}
	}
	return facts, nil
}

// provisionStatFile stats p and reports whether it is a file. Only a
// missing path counts as no file: any other failure (access denied) is
// an error, so that it is not mistaken for a file to upload. The Windows
// layer's errors already name the call and the path.
func provisionStatFile(w winos.OS, p string) (winos.FileInfo, bool, error) {
	st, err := w.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	return st, !st.IsDir, nil
}

// dotNetTicks is t as .NET's DateTime.Ticks in UTC (100 ns units since
// 0001-01-01): the form swdt records and compares in Known.
func dotNetTicks(t time.Time) int64 {
	const unixEpochTicks = 621355968000000000
	return unixEpochTicks + t.UTC().UnixNano()/100
}

func provisionNonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// filesRemove deletes leftover files such as staged uploads. Missing
// files are skipped; a file that cannot be deleted (a running binary) is
// an error.
func filesRemove(_ context.Context, w winos.OS, req ops.FilesRemoveRequest) (ops.FilesRemoveResponse, error) {
	resp := ops.FilesRemoveResponse{Removed: []string{}}
	for _, p := range req.Paths {
		_, ok, err := provisionStatFile(w, p)
		if err != nil {
			return resp, err
		}
		if !ok {
			continue
		}
		if err := w.Remove(p); err != nil {
			return resp, err
		}
		resp.Removed = append(resp.Removed, p)
	}
	return resp, nil
}
