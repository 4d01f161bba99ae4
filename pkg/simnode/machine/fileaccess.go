package machine

import (
	"os"
	"time"
)

// The file operations of one account: each checks the account's access
// (acl.go) before it acts, and records who created what it creates. SFTP
// sessions and the Node methods go through these; the machine's own
// operations (files.go) apply NTFS's locking rules only.

// denied runs check with the machine locked on p's canonical path and
// whether it exists and is a folder.
func (m *Machine) denied(p string, check func(w winPath, exists, isDir bool) error) (winPath, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, host, err := m.locate(p)
	if err != nil {
		return w, false, err
	}
	exists, isDir := hostIsDir(host)
	return w, exists, check(w, exists, isDir)
}

func (m *Machine) created(a Account, w winPath) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.createdLocked(a, w)
}

func (m *Machine) openWriteAs(a Account, p string, fl OpenFlags) (*WriteHandle, error) {
	w, existed, err := m.denied(p, func(w winPath, exists, isDir bool) error {
		switch {
		case exists && !fl.Excl:
			return m.checkLocked(a, "open", w, isDir, accWrite)
		case !exists && fl.Create:
			return m.checkLocked(a, "open", w.dir(), true, accAddFile)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	h, err := m.openWrite(p, fl)
	if err == nil && !existed {
		m.created(a, w)
	}
	return h, err
}

func (m *Machine) openReadAs(a Account, p string) (*os.File, winPath, error) {
	if _, _, err := m.denied(p, func(w winPath, exists, isDir bool) error {
		if !exists {
			return nil
		}
		return m.checkLocked(a, "open", w, isDir, accRead)
	}); err != nil {
		return nil, "", err
	}
	return m.openRead(p)
}

func (m *Machine) listAs(a Account, p string) ([]FileInfo, error) {
	if _, _, err := m.denied(p, func(w winPath, exists, isDir bool) error {
		if !exists {
			return nil
		}
		return m.checkLocked(a, "list", w, isDir, accRead)
	}); err != nil {
		return nil, err
	}
	return m.list(p)
}

func (m *Machine) removeAs(a Account, p string, recursive bool) error {
	if _, _, err := m.denied(p, func(w winPath, exists, isDir bool) error {
		if !exists {
			return nil
		}
		return m.checkDeleteLocked(a, "remove", w, isDir)
	}); err != nil {
		return err
	}
	return m.remove(p, recursive)
}

func (m *Machine) renameAs(a Account, oldp, newp string, replace bool) error {
	fromDir := false
	if _, _, err := m.denied(oldp, func(w winPath, exists, isDir bool) error {
		fromDir = isDir
		if !exists {
			return nil
		}
		return m.checkDeleteLocked(a, "rename", w, isDir)
	}); err != nil {
		return err
	}
	if _, _, err := m.denied(newp, func(w winPath, exists, isDir bool) error {
		want := accAddFile
		if fromDir {
			want = accAddFolder
		}
		if err := m.checkLocked(a, "rename", w.dir(), true, want); err != nil {
			return err
		}
		if exists && replace {
			return m.checkDeleteLocked(a, "rename", w, isDir)
		}
		return nil
	}); err != nil {
		return err
	}
	return m.rename(oldp, newp, replace)
}

// mkdirAs creates p (and with all its missing parents, each checked and
// owned on its own).
func (m *Machine) mkdirAs(a Account, p string, all bool) error {
	w, err := parseWinPath(p)
	if err != nil {
		return err
	}
	todo := []winPath{w}
	if all {
		todo = todo[:0]
		cur := winPath(w.drive() + `:\`)
		for _, e := range w.elems() {
			cur = cur.join(e)
			todo = append(todo, cur)
		}
	}
	for i, d := range todo {
		cw, existed, err := m.denied(string(d), func(w winPath, exists, isDir bool) error {
			if exists {
				return nil
			}
			return m.checkLocked(a, "mkdir", w.dir(), true, accAddFolder)
		})
		if err != nil {
			return err
		}
		if existed && (all || i < len(todo)-1) {
			if fi, err := m.stat(string(d)); err == nil && fi.IsDir {
				continue
			}
		}
		if err := m.mkdir(string(d), false); err != nil {
			if fi, serr := m.stat(string(d)); all && serr == nil && fi.IsDir {
				continue // another creator won the race
			}
			return err
		}
		m.created(a, cw)
	}
	return nil
}

func (m *Machine) truncateAs(a Account, p string, size int64) error {
	if _, _, err := m.denied(p, func(w winPath, exists, isDir bool) error {
		if !exists {
			return nil
		}
		return m.checkLocked(a, "truncate", w, isDir, accWrite)
	}); err != nil {
		return err
	}
	return m.truncate(p, size)
}

func (m *Machine) chtimesAs(a Account, p string, atime, mtime time.Time) error {
	if _, _, err := m.denied(p, func(w winPath, exists, isDir bool) error {
		if !exists {
			return nil
		}
		return m.checkLocked(a, "setstat", w, isDir, accWrite)
	}); err != nil {
		return err
	}
	return m.chtimes(p, atime, mtime)
}
