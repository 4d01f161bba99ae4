package agent

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// removeFree removes the file at p so that its name is free at once. On
// Windows before 1903 (Server 2019) a deleted file that another program
// holds open sharing delete access (a log reader, a backup agent, another
// agent reading the lock) keeps its name until that handle closes, and
// creating the name, or renaming onto it, fails with access denied. So
// the file is first renamed beside itself (ops.DeletedPath) and deleted
// there: whatever lingers, lingers under that name. A missing p is the
// rename's error (winos.ErrFileNotFound, matching fs.ErrNotExist).
func removeFree(w winos.OS, p string) error {
	var id [6]byte
	_, _ = rand.Read(id[:])
	aside := ops.DeletedPath(p, hex.EncodeToString(id[:]))
	if err := w.Rename(p, aside); err != nil {
		return err
	}
	if err := w.Remove(aside); err != nil {
		return fmt.Errorf("remove %s, moved aside from %s: %w", aside, p, err)
	}
	return nil
}
