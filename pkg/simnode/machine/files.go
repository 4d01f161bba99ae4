package machine

import (
	"crypto/sha256"
	"encoding/hex"
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
	m      *Machine
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
	h.m.mu.Lock()
	defer h.m.mu.Unlock()
	if !h.closed {
		h.closed = true
		h.m.writers[h.key]--
		if h.m.writers[h.key] <= 0 {
			delete(h.m.writers, h.key)
		}
		if w, err := parseWinPath(h.key); err == nil {
			h.m.scanLocked(w, h.m.now())
		}
		h.mu.Lock()
		ms := h.markers
		h.mu.Unlock()
		if fi, serr := os.Stat(h.host); ms != nil && err == nil && serr == nil && fi.Size() == ms.n {
			h.m.markers.record(h.host, fi, ms.found)
		}
	}
	return err
}

func mapOSErr(op string, w winPath, hostPath string, err error) error {
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
			return fileErr(op, w, CodePathNotFound)
		}
		return fileErr(op, w, CodeFileNotFound)
	case errors.Is(err, fs.ErrExist):
		return fileErr(op, w, CodeAlreadyExists)
	}
	if strings.Contains(err.Error(), "directory not empty") {
		return fileErr(op, w, CodeDirNotEmpty)
	}
	if strings.Contains(err.Error(), "is a directory") || strings.Contains(err.Error(), "not a directory") {
		return fileErr(op, w, CodeAccessDenied)
	}
	return &FileError{Op: op, Path: string(w), Err: err}
}

// locate parses and resolves p; it must be called with m.mu held when the
// result is used for a lock decision.
func (m *Machine) locate(p string) (winPath, string, error) {
	w, err := parseWinPath(p)
	if err != nil {
		return "", "", err
	}
	host, canon, err := resolve(m.fsRoot, w)
	if err != nil {
		return w, "", fileErr("open", w, CodePathNotFound)
	}
	return canon, host, nil
}

func (m *Machine) openWrite(p string, fl OpenFlags) (*WriteHandle, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advanceLocked(m.now())
	w, host, err := m.locate(p)
	if err != nil {
		return nil, err
	}
	if m.lockedByLocked(w) != nil {
		return nil, fileErr("open", w, CodeSharingViolation)
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
	m.writers[w.key()]++
	m.forgetHash(w.key())
	h := &WriteHandle{File: f, m: m, key: w.key(), host: host}
	if fl.Trunc {
		h.markers = newMarkerStream()
	}
	return h, nil
}

func (m *Machine) openRead(p string) (*os.File, winPath, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, host, err := m.locate(p)
	if err != nil {
		return nil, w, err
	}
	f, err := os.Open(host)
	if err != nil {
		return nil, w, mapOSErr("open", w, host, err)
	}
	return f, w, nil
}

func (m *Machine) stat(p string) (FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, host, err := m.locate(p)
	if err != nil {
		return FileInfo{}, err
	}
	fi, err := os.Stat(host)
	if err != nil {
		return FileInfo{}, mapOSErr("stat", w, host, err)
	}
	return toInfo(w, fi), nil
}

func toInfo(w winPath, fi os.FileInfo) FileInfo {
	name := w.base()
	return FileInfo{Path: string(w), Name: name, Size: fi.Size(), ModTime: fi.ModTime(), IsDir: fi.IsDir(), Mode: fi.Mode()}
}

func (m *Machine) list(p string) ([]FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, host, err := m.locate(p)
	if err != nil {
		return nil, err
	}
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
		out = append(out, toInfo(w.join(e.Name()), fi))
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i].Name) < strings.ToLower(out[j].Name) })
	return out, nil
}

// lockedBelowLocked reports a process whose image is w or below w.
func (m *Machine) lockedBelowLocked(w winPath) *Process {
	prefix := w.key() + `\`
	for _, p := range m.st.Processes {
		k := strings.ToLower(p.Image)
		if k == w.key() || strings.HasPrefix(k, prefix) {
			return p
		}
	}
	return nil
}

func (m *Machine) remove(p string, recursive bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advanceLocked(m.now())
	w, host, err := m.locate(p)
	if err != nil {
		return err
	}
	if w.isRoot() {
		return fileErr("remove", w, CodeAccessDenied)
	}
	fi, err := os.Lstat(host)
	if err != nil {
		return mapOSErr("remove", w, host, err)
	}
	if m.lockedBelowLocked(w) != nil || m.writers[w.key()] > 0 || m.heldOpen(w) || m.scanningLocked(w, m.now()) {
		return fileErr("remove", w, CodeSharingViolation)
	}
	if fi.IsDir() && recursive {
		err = os.RemoveAll(host)
	} else {
		err = os.Remove(host)
	}
	if err == nil {
		m.forgetLocked(w)
		m.saveLocked()
	}
	return mapOSErr("remove", w, host, err)
}

func (m *Machine) rename(oldp, newp string, replace bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advanceLocked(m.now())
	from, fromHost, err := m.locate(oldp)
	if err != nil {
		return err
	}
	to, toHost, err := m.locate(newp)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(fromHost)
	if err != nil {
		return mapOSErr("rename", from, fromHost, err)
	}
	if m.heldOpen(from) || m.scanningLocked(from, m.now()) {
		return fileErr("rename", from, CodeSharingViolation)
	}
	if fi.IsDir() && m.lockedBelowLocked(from) != nil && m.lockedByLocked(from) == nil {
		// A directory holding a running executable cannot be renamed.
		return fileErr("rename", from, CodeSharingViolation)
	}
	if _, err := os.Stat(filepath.Dir(toHost)); err != nil {
		return fileErr("rename", to, CodePathNotFound)
	}
	if tfi, err := os.Lstat(toHost); err == nil && !strings.EqualFold(fromHost, toHost) {
		if !replace || tfi.IsDir() {
			return fileErr("rename", to, CodeAlreadyExists)
		}
		if m.lockedByLocked(to) != nil || m.writers[to.key()] > 0 {
			return fileErr("rename", to, CodeAccessDenied)
		}
	}
	if err := os.Rename(fromHost, toHost); err != nil {
		return mapOSErr("rename", from, fromHost, err)
	}
	m.markers.moved(fromHost, toHost)
	m.movedLocked(from, to)
	// Open handles follow the file: a running process now runs the
	// renamed file, which stays locked.
	changed := false
	for _, p := range m.st.Processes {
		if strings.EqualFold(p.Image, string(from)) {
			p.Image = string(to)
			changed = true
		} else if strings.HasPrefix(strings.ToLower(p.Image), from.key()+`\`) {
			p.Image = string(to) + p.Image[len(from):]
			changed = true
		}
	}
	if n := m.writers[from.key()]; n > 0 {
		delete(m.writers, from.key())
		m.writers[to.key()] += n
	}
	if changed {
		m.saveLocked()
	}
	return nil
}

func (m *Machine) mkdir(p string, all bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, host, err := m.locate(p)
	if err != nil {
		return err
	}
	if all {
		if fi, err := os.Stat(host); err == nil && !fi.IsDir() {
			return fileErr("mkdir", w, CodeAlreadyExists)
		}
		return mapOSErr("mkdir", w, host, os.MkdirAll(host, 0o755))
	}
	return mapOSErr("mkdir", w, host, os.Mkdir(host, 0o755))
}

func (m *Machine) truncate(p string, size int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advanceLocked(m.now())
	w, host, err := m.locate(p)
	if err != nil {
		return err
	}
	if m.lockedByLocked(w) != nil {
		return fileErr("truncate", w, CodeSharingViolation)
	}
	return mapOSErr("truncate", w, host, os.Truncate(host, size))
}

func (m *Machine) chtimes(p string, atime, mtime time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, host, err := m.locate(p)
	if err != nil {
		return err
	}
	return mapOSErr("setstat", w, host, os.Chtimes(host, atime, mtime))
}

// --- the file API op handlers use ---

// Stat describes the file or directory at p (any Windows spelling).
func (n *Node) Stat(p string) (FileInfo, error) { return n.m.stat(p) }

// Exists reports whether p exists.
func (n *Node) Exists(p string) bool { _, err := n.m.stat(p); return err == nil }

// List returns the entries of directory p, sorted by name.
func (n *Node) List(p string) ([]FileInfo, error) { return n.m.listAs(n.account, p) }

// Open opens p for reading (allowed even for a running executable).
func (n *Node) Open(p string) (io.ReadCloser, error) {
	f, _, err := n.m.openReadAs(n.account, p)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ReadFile returns the content of p.
func (n *Node) ReadFile(p string) ([]byte, error) {
	f, _, err := n.m.openReadAs(n.account, p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Create opens p for writing, creating or truncating it. It fails with a
// sharing violation when p is a running process's image, and when the
// parent directory is missing (use MkdirAll).
func (n *Node) Create(p string) (io.WriteCloser, error) {
	return n.m.openWriteAs(n.account, p, OpenFlags{Create: true, Trunc: true})
}

// WriteFile replaces the content of p (creating it).
func (n *Node) WriteFile(p string, data []byte) error {
	f, err := n.Create(p)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// AppendFile appends data to p (creating it).
func (n *Node) AppendFile(p string, data []byte) error {
	f, err := n.m.openWriteAs(n.account, p, OpenFlags{Create: true})
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Rename moves oldPath to newPath on the same drive (Move-Item /
// Rename-Item). A running executable can be renamed (its process keeps
// running the renamed file, which stays locked). An existing newPath is an
// error unless replace is set (Move-Item -Force), and a locked newPath is
// always refused.
func (n *Node) Rename(oldPath, newPath string, replace bool) error {
	return n.m.renameAs(n.account, oldPath, newPath, replace)
}

// Remove deletes a file or an empty directory; a running executable (or a
// directory holding one) cannot be removed.
func (n *Node) Remove(p string) error { return n.m.removeAs(n.account, p, false) }

// RemoveAll deletes p and everything below it, refusing when it holds a
// running executable.
func (n *Node) RemoveAll(p string) error { return n.m.removeAs(n.account, p, true) }

// MkdirAll creates directory p and its parents (New-Item -Force).
func (n *Node) MkdirAll(p string) error { return n.m.mkdirAs(n.account, p, true) }

// Copy copies src to dst (Copy-Item); an existing dst is replaced only when
// replace is set, and never when it is locked.
func (n *Node) Copy(src, dst string, replace bool) error {
	in, _, err := n.m.openReadAs(n.account, src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := n.m.openWriteAs(n.account, dst, OpenFlags{Create: true, Trunc: true, Excl: !replace})
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Hash returns the lower-case hex SHA-256 and the size of p, streaming it
// (Get-FileHash).
func (n *Node) Hash(p string) (string, int64, error) {
	f, _, err := n.m.openReadAs(n.account, p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), size, nil
}

// Contains reports whether p holds marker, streaming it.
func (n *Node) Contains(p string, marker string) (bool, error) {
	f, _, err := n.m.openReadAs(n.account, p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, 256*1024+len(marker))
	keep := 0
	for {
		r, err := io.ReadFull(f, buf[keep:])
		window := buf[:keep+r]
		if strings.Contains(string(window), marker) {
			return true, nil
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		keep = min(len(marker), len(window))
		copy(buf, window[len(window)-keep:])
	}
}

// LockedBy returns the process whose image p is, if any: such a file can
// be read and renamed but not written, truncated or removed.
func (n *Node) LockedBy(p string) (Process, bool) {
	var out Process
	var ok bool
	n.m.view(func(_ *State, _ time.Time) {
		w, _, err := n.m.locate(p)
		if err != nil {
			return
		}
		if pr := n.m.lockedByLocked(w); pr != nil {
			out, ok = *pr, true
		}
	})
	return out, ok
}

// ACL returns the explicit ACL of p, or nil when p only inherits.
func (n *Node) ACL(p string) (*ACL, error) {
	w, err := parseWinPath(p)
	if err != nil {
		return nil, err
	}
	var out *ACL
	n.m.view(func(s *State, _ time.Time) {
		if a := s.ACLs[w.key()]; a != nil {
			c := *a
			c.Entries = append([]ACE(nil), a.Entries...)
			out = &c
		}
	})
	return out, nil
}

// SetACL records p's ACL (icacls); nil returns p to inheriting.
func (n *Node) SetACL(p string, acl *ACL) error {
	w, err := parseWinPath(p)
	if err != nil {
		return err
	}
	if !n.account.Admin {
		if err := n.m.writeSecurity(n.account, p); err != nil {
			return err
		}
	}
	return n.m.update(func(s *State, _ time.Time) error {
		if acl == nil {
			delete(s.ACLs, w.key())
			return nil
		}
		c := *acl
		c.Entries = append([]ACE(nil), acl.Entries...)
		s.ACLs[w.key()] = &c
		return nil
	})
}

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

// MarkerVersion followed by a version ("SIMNODE-VERSION=1.29.1") in the
// first VersionScanLimit bytes of a file gives it that file version; files
// without it have none (as a Go binary built without a version resource).
const MarkerVersion = "SIMNODE-VERSION="

// VersionScanLimit bounds the search for MarkerVersion. Windows reads a
// version from the PE resources without reading the whole file, so the
// cost of asking must not grow with the binary's size here either.
const VersionScanLimit = 1 << 20

// FileVersion returns p's file version ((Get-Item p).VersionInfo.FileVersion),
// "" when it has none.
func (n *Node) FileVersion(p string) (string, error) {
	file, _, err := n.m.openRead(p)
	if err != nil {
		return "", err
	}
	defer file.Close()
	f := io.LimitReader(file, VersionScanLimit)
	buf := make([]byte, 256*1024+64)
	keep := 0
	for {
		r, err := io.ReadFull(f, buf[keep:])
		window := buf[:keep+r]
		if i := strings.Index(string(window), MarkerVersion); i >= 0 && (len(window)-i > 48 || err != nil) {
			v := window[i+len(MarkerVersion):]
			end := 0
			for end < len(v) && end < 32 && (v[end] == '.' || v[end] == '-' || v[end] == '+' || v[end] >= '0' && v[end] <= '9' || v[end] >= 'a' && v[end] <= 'z' || v[end] >= 'A' && v[end] <= 'Z') {
				end++
			}
			return string(v[:end]), nil
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		keep = min(64, len(window))
		copy(buf, window[len(window)-keep:])
	}
}

// OpenFile opens p for reading as the node's account, as CreateFile with
// FILE_SHARE_READ|WRITE|DELETE does (allowed for a running executable).
func (n *Node) OpenFile(p string) (*os.File, error) {
	f, _, err := n.m.openReadAs(n.account, p)
	return f, err
}

// ReadDir lists the names in directory p as FindFirstFile does.
func (n *Node) ReadDir(p string) ([]string, error) {
	fis, err := n.m.list(p)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(fis))
	for i, fi := range fis {
		names[i] = fi.Name
	}
	return names, nil
}

// CheckPath fails when p is not a Windows path the model can name.
func CheckPath(p string) error {
	_, err := parseWinPath(p)
	return err
}

// OpenWrite opens p for writing as the node's account (an SFTP open).
func (n *Node) OpenWrite(p string, fl OpenFlags) (*WriteHandle, error) {
	return n.m.openWriteAs(n.account, p, fl)
}

// Mkdir creates directory p as the node's account.
func (n *Node) Mkdir(p string) error { return n.m.mkdirAs(n.account, p, false) }

// Truncate sets the size of file p as the node's account.
func (n *Node) Truncate(p string, size int64) error { return n.m.truncateAs(n.account, p, size) }

// Chtimes sets p's access and modification times as the node's account.
func (n *Node) Chtimes(p string, atime, mtime time.Time) error {
	return n.m.chtimesAs(n.account, p, atime, mtime)
}

// RealPath spells p as Windows OpenSSH's sftp-server does: /C:/k/x, with
// the on-disk spelling of its existing components.
func (n *Node) RealPath(p string) (string, error) {
	w, err := parseWinPath(p)
	if err != nil {
		return "", err
	}
	if _, canon, err := resolve(n.m.fsRoot, w); err == nil {
		w = canon
	}
	return w.sftpPath(), nil
}
