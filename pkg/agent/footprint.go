package agent

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The node footprint (ops.AgentDir: the agent, the swap lock, the journal
// and their temporary files) belongs to Administrators and SYSTEM. It
// lies below C:\Program Files, where Windows lets no other account create
// anything; the agent still checks the folder's owner and DACL before it
// reads or writes its files there, repairs them when they are wrong, and
// refuses to go on when the repair does not hold. A file in it that
// Administrators or SYSTEM do not own was not written by swdt: it is
// removed unread (docs/DESIGN.md §9).

// footprintACL is the folder's DACL: inheritance off, full control for
// Administrators and SYSTEM, passed on to everything in it.
var footprintACL = winos.ACL{Protected: true, Entries: []winos.ACE{
	{SID: winos.SIDAdministrators, Mask: winos.FileAllAccess, Inherit: true},
	{SID: winos.SIDSystem, Mask: winos.FileAllAccess, Inherit: true},
}}

// adminSID reports whether sid is Administrators, SYSTEM or
// TrustedInstaller: the system's own accounts. TrustedInstaller owns
// C:\Windows and C:\Program Files, with full control, on every install;
// only the system's servicing runs as it (shared DESIGN §6 and §9).
func adminSID(sid string) bool {
	return sid == winos.SIDAdministrators || sid == winos.SIDSystem || sid == winos.SIDTrustedInstaller
}

// onlyAdminsWrite reports whether acl lets nobody but Administrators and
// SYSTEM change anything (others may read and execute).
func onlyAdminsWrite(acl winos.ACL) bool {
	for _, e := range acl.Entries {
		if e.Deny || adminSID(e.SID) {
			continue
		}
		if e.Mask&^uint32(winos.FileReadExecute) != 0 {
			return false
		}
	}
	return true
}

// footprintOK reports whether the folder dir belongs to Administrators,
// SYSTEM or the agent's account and only Administrators and SYSTEM may
// change it, and if not, what is wrong.
func footprintOK(w winos.OS, dir string) (string, error) {
	owner, ownerOK, err := adminsOwn(w, dir)
	if err != nil {
		return "", err
	}
	acl, err := w.ACL(dir)
	if err != nil {
		return "", fmt.Errorf("read the ACL of %s: %w", dir, err)
	}
	switch {
	case !ownerOK:
		return "it is owned by " + owner, nil
	case !acl.Protected:
		return "it inherits its parent's permissions", nil
	case !onlyAdminsWrite(acl):
		return "accounts other than Administrators and SYSTEM may change it", nil
	}
	return "", nil
}

// footprint makes sure ops.AgentDir exists and belongs to Administrators
// and SYSTEM alone, repairing its owner and DACL if needed.
func footprint(w winos.OS) error {
	_, err := footprintKept(w)
	return err
}

// footprintKept is footprint, and reports whether this system keeps the
// security descriptors it is given (not Wine): only then does a DACL say
// who may write a file.
func footprintKept(w winos.OS) (bool, error) {
	if err := w.MkdirAll(ops.AgentDir); err != nil {
		return false, fmt.Errorf("create %s: %w", ops.AgentDir, err)
	}
	_, kept, err := secureFolder(w, ops.AgentDir, ops.KindUnsafeFootprint)
	return kept, err
}

// secureFolder makes the existing folder dir belong to Administrators
// and SYSTEM alone, repairing its owner and DACL if needed; a repair
// that does not hold fails with code. repaired says what was wrong when
// it was repaired; kept is false on a system that keeps no security
// descriptors (Wine), where dir is used as it is.
func secureFolder(w winos.OS, dir string, code ops.Kind) (repaired string, kept bool, err error) {
	return secureFolderWith(w, dir, code, footprintACL)
}

// secureFolderWith is secureFolder with acl for the DACL it sets: one
// that lets nobody but Administrators and SYSTEM change anything.
func secureFolderWith(w winos.OS, dir string, code ops.Kind, acl winos.ACL) (repaired string, kept bool, err error) {
	wrong, err := footprintOK(w, dir)
	if err != nil || wrong == "" {
		return "", true, err
	}
	before, err := w.Owner(dir)
	if err != nil {
		return "", true, fmt.Errorf("read the owner of %s: %w", dir, err)
	}
	if err := w.SetOwner(dir, winos.SIDAdministrators); err != nil {
		return "", true, fmt.Errorf("%s is not safe (%s) and its owner cannot be set to Administrators: %w", dir, wrong, err)
	}
	if err := w.SetACL(dir, acl); err != nil {
		return "", true, fmt.Errorf("%s is not safe (%s) and its ACL cannot be restricted to Administrators and SYSTEM: %w", dir, wrong, err)
	}
	again, err := footprintOK(w, dir)
	if err != nil {
		again = err.Error()
	}
	if again != "" && descriptorsNotKept(w, dir, before) {
		// The system accepted the owner and ACL but keeps neither (Wine
		// does not): nothing can be restricted there, and the folder is
		// used when the agent's own account made it, as on a system
		// without ACLs.
		return "", false, nil
	}
	if again != "" {
		return "", true, Fail(code, "%s is not safe (%s) and could not be repaired (%s): nothing was done; "+
			"as an administrator, delete it or give it to Administrators with only Administrators and SYSTEM allowed",
			dir, wrong, again)
	}
	return wrong, true, nil
}

// descriptorsNotKept reports whether the system ignores security
// descriptors: dir, whose owner was just set to Administrators without
// an error, still has its owner of before.
func descriptorsNotKept(w winos.OS, dir, before string) bool {
	after, err := w.Owner(dir)
	return err == nil && after == before && !adminSID(after)
}

// discardUntrusted removes p when it exists and neither Administrators,
// SYSTEM nor the agent's account own it: swdt did not write it, and it is never read. What
// was removed is added to notes (when not nil).
func discardUntrusted(w winos.OS, p string, notes *[]string) error {
	owner, ok, err := adminsOwn(w, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || ok {
		return err
	}
	if err := w.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s, which %s owns and swdt did not write: %w", p, owner, err)
	}
	if notes != nil {
		*notes = append(*notes, fmt.Sprintf("removed %s unread: it is owned by %s, not by Administrators or SYSTEM, so swdt did not write it", p, owner))
	}
	return nil
}

// adminsOwn reports whether Administrators, SYSTEM or the agent's own
// (administrator) account own p, and who does: a file anyone else owns
// was not written by swdt (or by the administrator who installed the
// binary), and its owner may still change it, so it is never put into
// place.
func adminsOwn(w winos.OS, p string) (owner string, ok bool, err error) {
	owner, err = w.Owner(p)
	if err != nil {
		return "", false, fmt.Errorf("read the owner of %s: %w", p, err)
	}
	if adminSID(owner) {
		return owner, true, nil
	}
	// Where policy makes an administrator's files its own rather than
	// Administrators' (or the system records the creator: Wine), the
	// agent's own files are owned by its account.
	self, err := w.CurrentUser()
	if err != nil {
		return "", false, fmt.Errorf("read the current user: %w", err)
	}
	own := (self.Owner != "" && owner == self.Owner) || (self.SID != "" && owner == self.SID)
	return owner, self.Admin && own, nil
}

// writeOwnFile writes a new file of swdt's own at p, with CREATE_NEW's
// effect: whatever is at p is removed first (a file another account
// created there is never adopted), and the written file must belong to
// Administrators or SYSTEM and hold data before it is used, else it is
// removed and the write fails.
func writeOwnFile(w winos.OS, p string, data []byte) error {
	if err := removeFree(w, p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s before writing it: %w", p, err)
	}
	if err := w.WriteFile(p, data); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	owner, ok, err := adminsOwn(w, p)
	if err == nil && !ok {
		err = fmt.Errorf("%s belongs to %s, who created it while swdt wrote it: not used", p, owner)
	}
	if err == nil {
		var got []byte
		if got, err = readSmallFile(w, p); err == nil && !bytes.Equal(got, data) {
			err = fmt.Errorf("%s changed while swdt wrote it: not used", p)
		}
	}
	if err != nil {
		_ = w.Remove(p)
		return err
	}
	return nil
}

// stagedBeside reports whether p is a run's staged file (or its encoded
// upload) beside one of dests: <destination>.swdt-new-<runID>, with
// .swdt-zst after it for the upload.
func stagedBeside(p, runID string, dests []string) bool {
	if !ops.ValidRunID(runID) {
		return false
	}
	for _, d := range dests {
		staged := ops.StagedPath(d, runID)
		if strings.EqualFold(p, staged) || strings.EqualFold(p, ops.EncodedPath(staged)) {
			return true
		}
	}
	return false
}

// trustedItems keeps the journal items a run of the caller's node file
// could have written: the destination is one of trusted, the staged file
// is swdt's name beside it, the backup is <destination>.swdt-bak, and the
// health checks are replaced by the node file's. An undo's journal (undo)
// puts <destination>.swdt-bak back and keeps the binary it replaces as
// <destination>.swdt-failed. The rest is described in ignored.
func trustedItems(items []ops.SwapItem, trusted []ops.TrustedBinary, undo bool) (kept []ops.SwapItem, ignored []string) {
	for _, it := range items {
		var match *ops.TrustedBinary
		for i := range trusted {
			if strings.EqualFold(trusted[i].Destination, it.Destination) {
				match = &trusted[i]
			}
		}
		why := ""
		_, runID, _ := ops.StagedDest(it.Staged)
		switch {
		case match == nil:
			why = "its destination is not a binary of this node file"
		case undo && !strings.EqualFold(it.Staged, ops.BackupPath(it.Destination)):
			why = "the undo's staged file " + it.Staged + " is not " + ops.BackupPath("<destination>")
		case undo && !strings.EqualFold(it.Backup, ops.FailedPath(it.Destination)):
			why = "the undo's backup " + it.Backup + " is not " + ops.FailedPath("<destination>")
		case undo:
		case !stagedBeside(it.Staged, runID, []string{it.Destination}):
			why = "its staged file " + it.Staged + " is not named " + ops.StagedPath("<destination>", "<run ID>")
		case !strings.EqualFold(it.Backup, ops.BackupPath(it.Destination)):
			why = "its backup " + it.Backup + " is not " + ops.BackupPath("<destination>")
		case it.Encoded != "" && !strings.EqualFold(it.Encoded, ops.EncodedPath(it.Staged)):
			why = "its encoded upload " + it.Encoded + " is not " + ops.EncodedPath("<staged>")
		}
		if why != "" {
			ignored = append(ignored, fmt.Sprintf("journal item %s (service %q) left alone: %s", it.Destination, it.Service, why))
			continue
		}
		it.HealthChecks = match.HealthChecks
		if match.Service != "" && !strings.EqualFold(match.Service, it.Service) {
			it.Service = match.Service
		}
		kept = append(kept, it)
	}
	return kept, ignored
}

// withLeftovers returns p and the files swdt keeps beside it
// (ops.IsLeftover) that exist now: what removing p for good must remove,
// staged files of any run included.
func withLeftovers(w winos.OS, p string) ([]string, error) {
	dir := winpath.Dir(p)
	if dir == "" {
		return nil, Fail(ops.KindBadRequest, "%s is not a full path", p)
	}
	names, err := w.ReadDir(dir)
	if err != nil && !winsNotFound(err) {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	out := []string{p}
	for _, name := range names {
		if full := winpath.Join(dir, name); ops.IsLeftover(full, p) {
			out = append(out, full)
		}
	}
	return out, nil
}
