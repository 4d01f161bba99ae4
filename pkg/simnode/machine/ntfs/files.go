package ntfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// FileInfo describes a file or directory on the simulated drive.
type FileInfo struct {
	// Path is the canonical Windows path, with the on-disk spelling.
	Path    string
	Name    string
	Size    int64
	ModTime time.Time
	IsDir   bool
	Mode    fs.FileMode
}

// OpenFlags say how a file is opened for writing: created when missing,
// truncated, created only when missing (Excl), and readable too.
type OpenFlags struct {
	Create, Trunc, Excl, Read bool
}

// WriteHandle is a file open for writing. While any is open, the file
// cannot become a process image (as Windows refuses to run a file open for
// writing).
type WriteHandle struct {
	*os.File
	v      *Volume
	key    string
	host   string
	closed bool
	// markers follows the writes of a file written from its start, in
	// order (nil once written any other way): its markers are known when
	// it closes. Under mu: SFTP writes at offsets from several workers.
	mu      sync.Mutex
	markers *markerStream
}

func (h *WriteHandle) Write(p []byte) (int, error) {
	n, err := h.File.Write(p)
	h.mu.Lock()
	if h.markers != nil {
		h.markers.write(p[:n])
	}
	h.mu.Unlock()
	return n, err
}

// unordered records a write out of order or around Write: the markers
// are found when the program starts.
func (h *WriteHandle) unordered() {
	h.mu.Lock()
	h.markers = nil
	h.mu.Unlock()
}

// WriteString is Write.
func (h *WriteHandle) WriteString(s string) (int, error) { return h.Write([]byte(s)) }

// WriteAt, Seek, Truncate and ReadFrom write out of order, or around
// Write (unordered).
func (h *WriteHandle) WriteAt(p []byte, off int64) (int, error) {
	h.unordered()
	return h.File.WriteAt(p, off)
}

// Seek is os.File's.
func (h *WriteHandle) Seek(off int64, whence int) (int64, error) {
	h.unordered()
	return h.File.Seek(off, whence)
}

// Truncate is os.File's.
func (h *WriteHandle) Truncate(size int64) error {
	h.unordered()
	return h.File.Truncate(size)
}

// ReadFrom is os.File's.
func (h *WriteHandle) ReadFrom(r io.Reader) (int64, error) {
	h.unordered()
	return h.File.ReadFrom(r)
}

func (h *WriteHandle) Close() error {
	err := h.File.Close()
	h.v.mu.Lock()
	defer h.v.mu.Unlock()
	if !h.closed {
		h.closed = true
		h.v.writers[h.key]--
		if h.v.writers[h.key] <= 0 {
			delete(h.v.writers, h.key)
		}
		if w, err := ParsePath(h.key); err == nil {
			h.v.scanLocked(w, h.v.host.Now())
		}
		h.mu.Lock()
		ms := h.markers
		h.mu.Unlock()
		if fi, serr := os.Stat(h.host); ms != nil && err == nil && serr == nil && fi.Size() == ms.n {
			h.v.markers.record(h.host, fi, ms.found)
		}
	}
	return err
}

func mapOSErr(op string, w Path, hostPath string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FileError
	if errors.As(err, &fe) {
		return err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, perr := os.Stat(filepath.Dir(hostPath)); perr != nil {
			return FileErr(op, w, CodePathNotFound)
		}
		return FileErr(op, w, CodeFileNotFound)
	case errors.Is(err, fs.ErrExist):
		return FileErr(op, w, CodeAlreadyExists)
	}
	if strings.Contains(err.Error(), "directory not empty") {
		return FileErr(op, w, CodeDirNotEmpty)
	}
	if strings.Contains(err.Error(), "is a directory") || strings.Contains(err.Error(), "not a directory") {
		return FileErr(op, w, CodeAccessDenied)
	}
	return &FileError{Op: op, Path: string(w), Err: err}
}

// locate parses and resolves p; it must be called with v.mu held when the
// result is used for a lock decision.
func (v *Volume) Locate(p string) (Path, string, error) {
	w, err := ParsePath(p)
	if err != nil {
		return "", "", err
	}
	host, canon, err := Resolve(v.root, w)
	if err != nil {
		return w, "", FileErr("open", w, CodePathNotFound)
	}
	return canon, host, nil
}

func (v *Volume) openWrite(p string, fl OpenFlags) (*WriteHandle, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.host.Advance()
	w, host, err := v.Locate(p)
	if err != nil {
		return nil, err
	}
	if v.host.ImageLocked(w) {
		return nil, FileErr("open", w, CodeSharingViolation)
	}
	if v.pendingLocked(w) {
		return nil, FileErr("open", w, CodeAccessDenied)
	}
	flags := os.O_WRONLY
	if fl.Read {
		flags = os.O_RDWR
	}
	if fl.Create {
		flags |= os.O_CREATE
	}
	if fl.Trunc {
		flags |= os.O_TRUNC
	}
	if fl.Excl {
		flags |= os.O_EXCL
	}
	f, err := os.OpenFile(host, flags, 0o644)
	if err != nil {
		return nil, mapOSErr("open", w, host, err)
	}
	v.writers[w.Key()]++
	v.forgetHash(w.Key())
	h := &WriteHandle{File: f, v: v, key: w.Key(), host: host}
	if fl.Trunc {
		h.markers = newMarkerStream()
	}
	return h, nil
}

func (v *Volume) OpenRead(p string) (*os.File, Path, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	w, host, err := v.Locate(p)
	if err != nil {
		return nil, w, err
	}
	if v.pendingLocked(w) {
		return nil, w, FileErr("open", w, CodeAccessDenied)
	}
	f, err := os.Open(host)
	if err != nil {
		return nil, w, mapOSErr("open", w, host, err)
	}
	return f, w, nil
}

func (v *Volume) Stat(p string) (FileInfo, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	w, host, err := v.Locate(p)
	if err != nil {
		return FileInfo{}, err
	}
	if v.pendingLocked(w) {
		return FileInfo{}, FileErr("stat", w, CodeAccessDenied)
	}
	fi, err := os.Stat(host)
	if err != nil {
		return FileInfo{}, mapOSErr("stat", w, host, err)
	}
	return toInfo(w, fi), nil
}

func toInfo(w Path, fi os.FileInfo) FileInfo {
	name := w.Base()
	return FileInfo{Path: string(w), Name: name, Size: fi.Size(), ModTime: fi.ModTime(), IsDir: fi.IsDir(), Mode: fi.Mode()}
}

func (v *Volume) List(p string) ([]FileInfo, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	w, host, err := v.Locate(p)
	if err != nil {
		return nil, err
	}
	v.settlePendingLocked()
	entries, err := os.ReadDir(host)
	if err != nil {
		return nil, mapOSErr("list", w, host, err)
	}
	out := make([]FileInfo, 0, len(entries))
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, toInfo(w.Join(e.Name()), fi))
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i].Name) < strings.ToLower(out[j].Name) })
	return out, nil
}

func (v *Volume) remove(p string, recursive bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.host.Advance()
	w, host, err := v.Locate(p)
	if err != nil {
		return err
	}
	if w.IsRoot() {
		return FileErr("remove", w, CodeAccessDenied)
	}
	fi, err := os.Lstat(host)
	if err != nil {
		return mapOSErr("remove", w, host, err)
	}
	if v.pendingLocked(w) {
		return FileErr("remove", w, CodeAccessDenied)
	}
	if v.host.ImageBelow(w) || v.writers[w.Key()] > 0 || v.host.HeldOpen(w) || v.scanningLocked(w, v.host.Now()) {
		return FileErr("remove", w, CodeSharingViolation)
	}
	if !fi.IsDir() && v.deleteLocked(w, host) {
		v.forgetLocked(w)
		v.host.Save()
		return nil
	}
	switch {
	case fi.IsDir() && recursive:
		err = os.RemoveAll(host)
	case fi.Mode().IsRegular():
		err = v.discards.remove(host)
	default:
		err = os.Remove(host)
	}
	if err == nil {
		v.forgetLocked(w)
		v.host.Save()
	}
	return mapOSErr("remove", w, host, err)
}

func (v *Volume) rename(oldp, newp string, replace bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.host.Advance()
	from, fromHost, err := v.Locate(oldp)
	if err != nil {
		return err
	}
	to, toHost, err := v.Locate(newp)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(fromHost)
	if err != nil {
		return mapOSErr("rename", from, fromHost, err)
	}
	// A held file's identity is taken before the rename moves it.
	v.sharedFilesLocked()
	if v.pendingLocked(from) {
		return FileErr("rename", from, CodeAccessDenied)
	}
	if v.pendingLocked(to) {
		return FileErr("rename", to, CodeAccessDenied)
	}
	if v.host.HeldOpen(from) || v.scanningLocked(from, v.host.Now()) {
		return FileErr("rename", from, CodeSharingViolation)
	}
	if fi.IsDir() && v.host.ImageBelow(from) && !v.host.ImageLocked(from) {
		// A directory holding a running executable cannot be renamed.
		return FileErr("rename", from, CodeSharingViolation)
	}
	if _, err := os.Stat(filepath.Dir(toHost)); err != nil {
		return FileErr("rename", to, CodePathNotFound)
	}
	replaced := func(bool) {}
	if tfi, err := os.Lstat(toHost); err == nil && !strings.EqualFold(fromHost, toHost) {
		if !replace || tfi.IsDir() {
			return FileErr("rename", to, CodeAlreadyExists)
		}
		if v.host.ImageLocked(to) || v.writers[to.Key()] > 0 {
			return FileErr("rename", to, CodeAccessDenied)
		}
		if tfi.Mode().IsRegular() {
			replaced = v.discards.replacing(toHost)
		}
	}
	err = os.Rename(fromHost, toHost)
	replaced(err == nil)
	if err != nil {
		return mapOSErr("rename", from, fromHost, err)
	}
	v.markers.moved(fromHost, toHost)
	v.movedLocked(from, to)
	// Open handles follow the file: a running process now runs the
	// renamed file, which stays locked.
	v.host.ImagesMoved(from, to)
	if n := v.writers[from.Key()]; n > 0 {
		delete(v.writers, from.Key())
		v.writers[to.Key()] += n
	}
	return nil
}

func (v *Volume) Mkdir(p string, all bool) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	w, host, err := v.Locate(p)
	if err != nil {
		return err
	}
	if all {
		if fi, err := os.Stat(host); err == nil && !fi.IsDir() {
			return FileErr("mkdir", w, CodeAlreadyExists)
		}
		return mapOSErr("mkdir", w, host, os.MkdirAll(host, 0o755))
	}
	return mapOSErr("mkdir", w, host, os.Mkdir(host, 0o755))
}

func (v *Volume) truncate(p string, size int64) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.host.Advance()
	w, host, err := v.Locate(p)
	if err != nil {
		return err
	}
	if v.host.ImageLocked(w) {
		return FileErr("truncate", w, CodeSharingViolation)
	}
	return mapOSErr("truncate", w, host, os.Truncate(host, size))
}

func (v *Volume) Chtimes(p string, atime, mtime time.Time) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	w, host, err := v.Locate(p)
	if err != nil {
		return err
	}
	return mapOSErr("setstat", w, host, os.Chtimes(host, atime, mtime))
}

// --- the file API op handlers use ---

// AdminOnlyACL reports whether acl is what sshd requires of
// administrators_authorized_keys: inheritance removed and access only for
// Administrators and SYSTEM.
func AdminOnlyACL(acl *ACL) bool {
	if acl == nil || !acl.InheritanceDisabled || len(acl.Entries) == 0 {
		return false
	}
	for _, e := range acl.Entries {
		id := strings.ToLower(e.Identity)
		switch id {
		case "administrators", `builtin\administrators`, "system", `nt authority\system`:
		default:
			return false
		}
	}
	return true
}

// CheckPath fails when p is not a Windows path the model can name.
func CheckPath(p string) error {
	_, err := ParsePath(p)
	return err
}

// RealPath spells p as Windows OpenSSH's sftp-server does: /C:/k/x, with
// the on-disk spelling of its existing components.
func (v *Volume) RealPath(p string) (string, error) {
	w, err := ParsePath(p)
	if err != nil {
		return "", err
	}
	if _, canon, err := Resolve(v.root, w); err == nil {
		w = canon
	}
	return w.SFTPPath(), nil
}

// WritingLocked reports whether a write handle to w is open (such a file
// cannot become a process image).
func (v *Volume) WritingLocked(w Path) bool { return v.writers[w.Key()] > 0 }
