package ops

import "strings"

// The suffixes of the files swdt keeps beside a file on a node. Only the
// functions below spell them out; every other package asks them.
const (
	stagedMark      = ".swdt-new-"
	writingSuffix   = ".swdt-new"
	backupSuffix    = ".swdt-bak"
	failedSuffix    = ".swdt-failed"
	encodedSuffix   = ".swdt-zst"
	partSuffix      = ".swdt-part"
	untrustedSuffix = ".swdt-untrusted"
	deletedMark     = ".swdt-del-"
)

// StagedPath is where run runID stages a new binary for dest while the
// service keeps running: dest + ".swdt-new-" + runID, unique per run.
func StagedPath(dest, runID string) string { return dest + stagedMark + runID }

// StagedRunID returns the run ID of staged when it is a file StagedPath
// names beside dest (the comparison ignores case, as NTFS does). A run
// ID is never empty and holds none of `\/.:`.
func StagedRunID(staged, dest string) (runID string, ok bool) {
	prefix := dest + stagedMark
	if len(staged) <= len(prefix) || !strings.EqualFold(staged[:len(prefix)], prefix) {
		return "", false
	}
	id := staged[len(prefix):]
	return id, ValidRunID(id)
}

// StagedDest splits a staged path into its destination and run ID: ok is
// false when staged is not named <destination>.swdt-new-<run ID>.
func StagedDest(staged string) (dest, runID string, ok bool) {
	i := strings.LastIndex(strings.ToLower(staged), stagedMark)
	if i <= 0 {
		return "", "", false
	}
	id := staged[i+len(stagedMark):]
	return staged[:i], id, ValidRunID(id)
}

// ValidRunID reports whether id can name a run's files: not empty, and
// none of `\/.:`, so that a run's name never leaves its folder or takes
// another suffix.
func ValidRunID(id string) bool { return id != "" && !strings.ContainsAny(id, `\/.:`) }

// WritingPath is where swdt writes a whole small file (a config, a join
// file) before it renames it onto p.
func WritingPath(p string) string { return p + writingSuffix }

// BackupPath is where a swap keeps the binary it replaced at dest; an
// undo puts it back.
func BackupPath(dest string) string { return dest + backupSuffix }

// FailedPath is where a rollback or an undo keeps the new binary it took
// away from dest.
func FailedPath(dest string) string { return dest + failedSuffix }

// EncodedPath is the encoded upload (compressed or a patch) that is
// decoded into staged.
func EncodedPath(staged string) string { return staged + encodedSuffix }

// PartPath is where an SFTP upload to p is written until it is complete.
func PartPath(p string) string { return p + partSuffix }

// UntrustedPath is where swdt moves, unread, a file it was to extend that
// an ordinary user owned or could write (administrators_authorized_keys).
func UntrustedPath(p string) string { return p + untrustedSuffix }

// DeletedPath is where swdt moves p to delete it, so that p can be
// created again at once even where Windows keeps a deleted file's name
// while another program holds it open (before 1903: Server 2019). id is
// unique per delete and holds none of `\/.:`.
func DeletedPath(p, id string) string { return p + deletedMark + id }

// IsLeftover reports whether name (a path, compared without case) is one
// of the files swdt keeps beside p: its staged files of any run (and
// their encoded uploads), the file being written, the backup, the failed
// binary, an upload's part file and a deleted file whose name another
// program kept. Removing p for good removes these.
func IsLeftover(name, p string) bool {
	if len(name) <= len(p) || !strings.EqualFold(name[:len(p)], p) {
		return false
	}
	rest := strings.ToLower(name[len(p):])
	switch rest {
	case writingSuffix, backupSuffix, failedSuffix, partSuffix, writingSuffix + encodedSuffix:
		return true
	}
	if strings.HasPrefix(rest, deletedMark) {
		return ValidRunID(rest[len(deletedMark):])
	}
	if !strings.HasPrefix(rest, stagedMark) {
		return false
	}
	return ValidRunID(strings.TrimSuffix(rest[len(stagedMark):], encodedSuffix))
}

// IsEncodedPath reports whether p names an encoded upload (EncodedPath).
func IsEncodedPath(p string) bool { return strings.HasSuffix(strings.ToLower(p), encodedSuffix) }

// IsSwdtName reports whether p carries one of the names swdt gives its
// own files beside a file: such a path is never a destination, since
// swdt would remove or replace it as its own.
func IsSwdtName(p string) bool {
	l := strings.ToLower(p)
	for _, s := range []string{writingSuffix, backupSuffix, failedSuffix, encodedSuffix, partSuffix, untrustedSuffix} {
		if strings.HasSuffix(l, s) {
			return true
		}
	}
	return strings.Contains(l, stagedMark) || strings.Contains(l, deletedMark)
}
