package machine

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// The file API of the machine as one account sees it: package ntfs
// decides, as NTFS and Windows would.

// Stat describes the file or directory at p (any Windows spelling).
func (n *Node) Stat(p string) (FileInfo, error) { return n.m.vol.Stat(p) }

// Exists reports whether p exists.
func (n *Node) Exists(p string) bool { _, err := n.m.vol.Stat(p); return err == nil }

// List returns the entries of directory p, sorted by name.
func (n *Node) List(p string) ([]FileInfo, error) { return n.m.vol.ListAs(n.acct(), p) }

// Open opens p for reading (allowed even for a running executable).
func (n *Node) Open(p string) (io.ReadCloser, error) {
	f, _, err := n.m.vol.OpenReadAs(n.acct(), p)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ReadFile returns the content of p.
func (n *Node) ReadFile(p string) ([]byte, error) {
	f, _, err := n.m.vol.OpenReadAs(n.acct(), p)
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
	return n.m.vol.OpenWriteAs(n.acct(), p, OpenFlags{Create: true, Trunc: true})
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
	f, err := n.m.vol.OpenWriteAs(n.acct(), p, OpenFlags{Create: true})
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
	return n.m.vol.RenameAs(n.acct(), oldPath, newPath, replace)
}

// Remove deletes a file or an empty directory; a running executable (or a
// directory holding one) cannot be removed.
func (n *Node) Remove(p string) error { return n.m.vol.RemoveAs(n.acct(), p, false) }

// RemoveAll deletes p and everything below it, refusing when it holds a
// running executable.
func (n *Node) RemoveAll(p string) error { return n.m.vol.RemoveAs(n.acct(), p, true) }

// MkdirAll creates directory p and its parents (New-Item -Force).
func (n *Node) MkdirAll(p string) error { return n.m.vol.MkdirAs(n.acct(), p, true) }

// Copy copies src to dst (Copy-Item); an existing dst is replaced only when
// replace is set, and never when it is locked.
func (n *Node) Copy(src, dst string, replace bool) error {
	in, _, err := n.m.vol.OpenReadAs(n.acct(), src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := n.m.vol.OpenWriteAs(n.acct(), dst, OpenFlags{Create: true, Trunc: true, Excl: !replace})
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
	f, _, err := n.m.vol.OpenReadAs(n.acct(), p)
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
	f, _, err := n.m.vol.OpenReadAs(n.acct(), p)
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
		w, _, err := n.m.vol.Locate(p)
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
	w, err := ntfs.ParsePath(p)
	if err != nil {
		return nil, err
	}
	var out *ACL
	n.m.view(func(s *State, _ time.Time) {
		if a := s.ACLs[w.Key()]; a != nil {
			c := *a
			c.Entries = append([]ACE(nil), a.Entries...)
			out = &c
		}
	})
	return out, nil
}

// SetACL records p's ACL (icacls); nil returns p to inheriting.
func (n *Node) SetACL(p string, acl *ACL) error {
	w, err := ntfs.ParsePath(p)
	if err != nil {
		return err
	}
	if !n.account.Admin {
		if err := n.m.vol.WriteSecurity(n.acct(), p); err != nil {
			return err
		}
	}
	return n.m.update(func(s *State, _ time.Time) error {
		if acl == nil {
			delete(s.ACLs, w.Key())
			return nil
		}
		c := *acl
		c.Entries = append([]ACE(nil), acl.Entries...)
		s.ACLs[w.Key()] = &c
		return nil
	})
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
	file, _, err := n.m.vol.OpenRead(p)
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
	f, _, err := n.m.vol.OpenReadAs(n.acct(), p)
	return f, err
}

// ReadDir lists the names in directory p as FindFirstFile does.
func (n *Node) ReadDir(p string) ([]string, error) {
	fis, err := n.m.vol.List(p)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(fis))
	for i, fi := range fis {
		names[i] = fi.Name
	}
	return names, nil
}

// OpenWrite opens p for writing as the node's account (an SFTP open).
func (n *Node) OpenWrite(p string, fl OpenFlags) (*WriteHandle, error) {
	return n.m.vol.OpenWriteAs(n.acct(), p, fl)
}

// Mkdir creates directory p as the node's account.
func (n *Node) Mkdir(p string) error { return n.m.vol.MkdirAs(n.acct(), p, false) }

// Truncate sets the size of file p as the node's account.
func (n *Node) Truncate(p string, size int64) error { return n.m.vol.TruncateAs(n.acct(), p, size) }

// Chtimes sets p's access and modification times as the node's account.
func (n *Node) Chtimes(p string, atime, mtime time.Time) error {
	return n.m.vol.ChtimesAs(n.acct(), p, atime, mtime)
}

// RealPath spells p as Windows OpenSSH's sftp-server does: /C:/k/x, with
// the on-disk spelling of its existing components.
func (n *Node) RealPath(p string) (string, error) { return n.m.vol.RealPath(p) }

// Owner returns the owner of p as Windows spells the account.
func (n *Node) Owner(p string) (string, error) {
	var out string
	var err error
	n.m.view(func(_ *State, _ time.Time) { out, err = n.m.vol.OwnerLocked(p) })
	return out, err
}

// SetOwner makes account the owner of p (an administrator's
// take-ownership; a non-administrator may only give a file it may change
// the DACL of to itself).
func (n *Node) SetOwner(p, account string) error {
	return n.m.vol.SetOwner(n.acct(), p, account)
}

// Security is p's security descriptor as GetNamedSecurityInfo reads it:
// its explicit ACL (nil when it only inherits) and its effective entries
// (explicit and inherited), once the node's account may read it.
func (n *Node) Security(p string) (explicit *ACL, effective []ACE, err error) {
	return n.m.vol.SecurityOf(n.acct(), p)
}

// MayWriteSecurity fails unless the node's account may change p's DACL
// and owner (WRITE_DAC), as SetNamedSecurityInfo checks for anyone.
func (n *Node) MayWriteSecurity(p string) error { return n.m.vol.WriteSecurity(n.acct(), p) }

// CachedMarkers returns the markers the machine knows p holds without
// reading it (found as it was written, followed through renames), or nil.
func (n *Node) CachedMarkers(p string) map[string]bool { return n.m.vol.CachedMarkers(p) }

// File systems of the machine's C: drive (Config.FileSystem).
const (
	NTFS = "NTFS"
	// ReFS clones blocks (FSCTL_DUPLICATE_EXTENTS_TO_FILE), in clusters
	// of ReFSCluster bytes (ReFS's default).
	ReFS        = "ReFS"
	ReFSCluster = 4096
)

// CloneFile is a file open for writing that can take another's blocks
// when the volume clones them (ClusterSize is 0 on NTFS).
type CloneFile interface {
	io.WriteCloser
	ClusterSize() int64
	CloneAppend(src *os.File, off, n int64) error
}

// CreateCloning is Create, as a CloneFile.
func (n *Node) CreateCloning(p string) (CloneFile, error) {
	h, err := n.m.vol.OpenWriteAs(n.acct(), p, OpenFlags{Create: true, Trunc: true})
	if err != nil {
		return nil, err
	}
	return h, nil
}
