package ntfs

import (
	"fmt"
	"io"
	"os"
)

// Block cloning (FSCTL_DUPLICATE_EXTENTS_TO_FILE): a ReFS volume (Dev
// Drive is one) lets a file take another's clusters without copying
// them; NTFS refuses it. The volume is NTFS unless SetBlockCloning makes
// it ReFS. Whether the host file system shares the blocks too (btrfs or
// XFS, through FICLONERANGE) or copies them (tmpfs, ext4) does not change
// what the agent sees.

// SetBlockCloning makes the volume a ReFS one with clusters of cluster
// bytes (0: NTFS again).
func (v *Volume) SetBlockCloning(cluster int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.cluster = cluster
}

// ClusterSize is the volume's cluster size when it can clone blocks
// (ReFS), else 0.
func (v *Volume) ClusterSize() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cluster
}

// CloneAppend extends the file by the n bytes of src (a file of this
// volume OpenRead opened) at off, as FSCTL_DUPLICATE_EXTENTS_TO_FILE
// after SetEndOfFile does on ReFS, and moves the file's offset past them.
// NTFS refuses it, and ReFS refuses offsets and lengths that are not
// whole clusters and a range past src's end (ERROR_INVALID_PARAMETER);
// a refusal leaves the file as it was.
func (h *WriteHandle) CloneAppend(src *os.File, off, n int64) error {
	c := h.v.ClusterSize()
	if c == 0 {
		return &FileError{Op: "clone into", Path: h.key, Err: fmt.Errorf("the volume does not support block cloning (NTFS)")}
	}
	pos, err := h.File.Seek(0, io.SeekCurrent)
	if err != nil {
		return &FileError{Op: "clone into", Path: h.key, Err: err}
	}
	fi, err := src.Stat()
	if err != nil {
		return &FileError{Op: "clone from", Path: src.Name(), Err: err}
	}
	if off < 0 || n <= 0 || off%c != 0 || n%c != 0 || pos%c != 0 || off+n > fi.Size() {
		return FileErr("clone into", Path(h.key), CodeInvalidParameter)
	}
	if err := hostClone(h.File, src, off, pos, n); err != nil {
		_ = h.File.Truncate(pos)
		return &FileError{Op: "clone into", Path: h.key, Err: err}
	}
	if _, err := h.File.Seek(pos+n, io.SeekStart); err != nil {
		return &FileError{Op: "clone into", Path: h.key, Err: err}
	}
	h.cloned(src, off, n)
	return nil
}

// cloned follows a clone with the file's markers, as Write does, so
// that starting the program does not read the whole file again: from the
// ends of the cloned bytes alone when src is known to hold no marker, else
// from all of them (read from src, which has them cached).
func (h *WriteHandle) cloned(src *os.File, off, n int64) {
	clean := h.v.knownClean(src)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.markers == nil {
		return
	}
	read := func(off, n int64) []byte {
		b := make([]byte, n)
		if m, _ := src.ReadAt(b, off); int64(m) < n {
			return nil
		}
		return b
	}
	const edge = markerOverlap
	if clean && n > 2*edge {
		head, tail := read(off, edge), read(off+n-edge, edge)
		if head == nil || tail == nil {
			h.markers = nil
			return
		}
		h.markers.skip(head, tail, n)
		return
	}
	for n > 0 {
		b := read(off, min(n, 1<<20))
		if b == nil {
			h.markers = nil
			return
		}
		h.markers.write(b)
		off, n = off+int64(len(b)), n-int64(len(b))
	}
}

// knownClean reports whether the volume knows that f holds no marker.
func (v *Volume) knownClean(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	found, ok := v.markers[markerKey{f.Name(), fi.Size(), fi.ModTime()}]
	return ok && len(found) == 0
}

// copyRange is the host's fallback for a clone: src's n bytes at off
// written to dst at at.
func copyRange(dst, src *os.File, off, at, n int64) error {
	buf := make([]byte, min(n, 1<<20))
	for n > 0 {
		m, err := src.ReadAt(buf[:min(n, int64(len(buf)))], off)
		if m == 0 && err != nil {
			return err
		}
		if _, err := dst.WriteAt(buf[:m], at); err != nil {
			return err
		}
		off, at, n = off+int64(m), at+int64(m), n-int64(m)
	}
	return nil
}

// ClusterSize is the volume's when it clones blocks, else 0.
func (h *WriteHandle) ClusterSize() int64 { return h.v.ClusterSize() }
