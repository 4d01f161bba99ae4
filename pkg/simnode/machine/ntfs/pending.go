package ntfs

import "os"

// Deletes while another program holds a file open sharing delete access
// (Host.SharedOpen). Such a file can be renamed and deleted. On Windows
// 10 1903 and later the delete frees the name at once; before it (Server
// 2019), the file is delete pending until the last handle closes: it is
// still listed in its folder, and opening it, creating a file of its name
// or renaming onto it fails with access denied (STATUS_DELETE_PENDING).
// The volume keeps a pending file on the host until the fault no longer
// holds it.

// sharedFilesLocked returns the files the SharedOpen fault holds. A
// fault's path is resolved to its file once, when first seen, so the
// hold follows that file through renames and a new file of its name is
// not held.
func (v *Volume) sharedFilesLocked() []os.FileInfo {
	names := v.host.SharedOpen()
	if len(names) == 0 {
		v.shared = nil
		return nil
	}
	keep := make(map[string]os.FileInfo, len(names))
	for _, p := range names {
		w, err := ParsePath(p)
		if err != nil {
			continue
		}
		if fi, ok := v.shared[w.Key()]; ok {
			keep[w.Key()] = fi
			continue
		}
		if _, host, err := v.Locate(p); err == nil {
			if fi, err := os.Lstat(host); err == nil {
				keep[w.Key()] = fi
			}
		}
	}
	v.shared = keep
	out := make([]os.FileInfo, 0, len(keep))
	for _, fi := range keep {
		out = append(out, fi)
	}
	return out
}

// sharedLocked reports whether another program holds the file at host
// open sharing delete access.
func (v *Volume) sharedLocked(host string) bool {
	fi, err := os.Lstat(host)
	if err != nil {
		return false
	}
	for _, held := range v.sharedFilesLocked() {
		if os.SameFile(fi, held) {
			return true
		}
	}
	return false
}

// settlePendingLocked removes the pending files no handle holds any more.
func (v *Volume) settlePendingLocked() {
	if len(v.pending) == 0 {
		return
	}
	for key, host := range v.pending {
		if !v.sharedLocked(host) {
			_ = os.Remove(host)
			delete(v.pending, key)
		}
	}
}

// pendingLocked reports whether w is a delete-pending file's name.
func (v *Volume) pendingLocked(w Path) bool {
	v.settlePendingLocked()
	_, ok := v.pending[w.Key()]
	return ok
}

// deleteLocked deletes the file w at host: on a legacy-delete release a
// file held open sharing delete access becomes pending instead.
func (v *Volume) deleteLocked(w Path, host string) (pending bool) {
	if !v.host.LegacyDelete() || !v.sharedLocked(host) {
		return false
	}
	if v.pending == nil {
		v.pending = map[string]string{}
	}
	v.pending[w.Key()] = host
	return true
}
