package ntfs

import (
	"os"
	"time"
)

// The file operations of one account: each checks the account's access
// (security.go) before it acts, and records who created what it creates. SFTP
// sessions and the Node methods go through these; the machine's own
// operations (files.go) apply NTFS's locking rules only.

// denied runs check with the machine locked on p's canonical path and
// whether it exists and is a folder.
func (v *Volume) denied(p string, check func(w Path, exists, isDir bool) error) (Path, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	w, host, err := v.Locate(p)
	if err != nil {
		return w, false, err
	}
	exists, isDir := hostIsDir(host)
	return w, exists, check(w, exists, isDir)
}

func (v *Volume) created(a Account, w Path) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.createdLocked(a, w)
}

func (v *Volume) OpenWriteAs(a Account, p string, fl OpenFlags) (*WriteHandle, error) {
	w, existed, err := v.denied(p, func(w Path, exists, isDir bool) error {
		switch {
		case exists && !fl.Excl:
			return v.checkLocked(a, "open", w, isDir, accWrite)
		case !exists && fl.Create:
			return v.checkLocked(a, "open", w.Dir(), true, accAddFile)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	h, err := v.openWrite(p, fl)
	if err == nil && !existed {
		v.created(a, w)
	}
	return h, err
}

func (v *Volume) OpenReadAs(a Account, p string) (*os.File, Path, error) {
	if _, _, err := v.denied(p, func(w Path, exists, isDir bool) error {
		if !exists {
			return nil
		}
		return v.checkLocked(a, "open", w, isDir, accRead)
	}); err != nil {
		return nil, "", err
	}
	return v.OpenRead(p)
}

func (v *Volume) ListAs(a Account, p string) ([]FileInfo, error) {
	if _, _, err := v.denied(p, func(w Path, exists, isDir bool) error {
		if !exists {
			return nil
		}
		return v.checkLocked(a, "list", w, isDir, accRead)
	}); err != nil {
		return nil, err
	}
	return v.List(p)
}

func (v *Volume) RemoveAs(a Account, p string, recursive bool) error {
	if _, _, err := v.denied(p, func(w Path, exists, isDir bool) error {
		if !exists {
			return nil
		}
		return v.checkDeleteLocked(a, "remove", w, isDir)
	}); err != nil {
		return err
	}
	return v.remove(p, recursive)
}

func (v *Volume) RenameAs(a Account, oldp, newp string, replace bool) error {
	fromDir := false
	if _, _, err := v.denied(oldp, func(w Path, exists, isDir bool) error {
		fromDir = isDir
		if !exists {
			return nil
		}
		return v.checkDeleteLocked(a, "rename", w, isDir)
	}); err != nil {
		return err
	}
	if _, _, err := v.denied(newp, func(w Path, exists, isDir bool) error {
		want := accAddFile
		if fromDir {
			want = accAddFolder
		}
		if err := v.checkLocked(a, "rename", w.Dir(), true, want); err != nil {
			return err
		}
		if exists && replace {
			return v.checkDeleteLocked(a, "rename", w, isDir)
		}
		return nil
	}); err != nil {
		return err
	}
	return v.rename(oldp, newp, replace)
}

// mkdirAs creates p (and with all its missing parents, each checked and
// owned on its own).
func (v *Volume) MkdirAs(a Account, p string, all bool) error {
	w, err := ParsePath(p)
	if err != nil {
		return err
	}
	todo := []Path{w}
	if all {
		todo = todo[:0]
		cur := Path(w.Drive() + `:\`)
		for _, e := range w.Elems() {
			cur = cur.Join(e)
			todo = append(todo, cur)
		}
	}
	for i, d := range todo {
		cw, existed, err := v.denied(string(d), func(w Path, exists, isDir bool) error {
			if exists {
				return nil
			}
			return v.checkLocked(a, "mkdir", w.Dir(), true, accAddFolder)
		})
		if err != nil {
			return err
		}
		if existed && (all || i < len(todo)-1) {
			if fi, err := v.Stat(string(d)); err == nil && fi.IsDir {
				continue
			}
		}
		if err := v.Mkdir(string(d), false); err != nil {
			if fi, serr := v.Stat(string(d)); all && serr == nil && fi.IsDir {
				continue // another creator won the race
			}
			return err
		}
		v.created(a, cw)
	}
	return nil
}

func (v *Volume) TruncateAs(a Account, p string, size int64) error {
	if _, _, err := v.denied(p, func(w Path, exists, isDir bool) error {
		if !exists {
			return nil
		}
		return v.checkLocked(a, "truncate", w, isDir, accWrite)
	}); err != nil {
		return err
	}
	return v.truncate(p, size)
}

func (v *Volume) ChtimesAs(a Account, p string, atime, mtime time.Time) error {
	if _, _, err := v.denied(p, func(w Path, exists, isDir bool) error {
		if !exists {
			return nil
		}
		return v.checkLocked(a, "setstat", w, isDir, accWrite)
	}); err != nil {
		return err
	}
	return v.Chtimes(p, atime, mtime)
}
