package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// Busy files. MoveFileEx and DeleteFile need DELETE access, and fail with
// a sharing violation (32) or access denied (5) while another handle is
// open without FILE_SHARE_DELETE: antivirus, EDR and search indexers open
// fresh and just-run executables for a moment, and Go's os.Open does not
// share delete. Like Go's own cmd/go/internal/robustio, the agent tries a
// rename or a remove again on those errors for ops.BusyFileWait (the
// busy-file rule swdt's SFTP renames follow too) before it fails, naming
// the file and its likely holder.

// busyOS is the Windows layer every handler gets: renames and removes are
// tried again while the file is busy.
type busyOS struct {
	winos.OS
	ctx context.Context
}

// Rename renames, trying again while oldPath is busy.
func (b busyOS) Rename(oldPath, newPath string) error {
	return b.retry("rename", oldPath, func() error { return b.OS.Rename(oldPath, newPath) })
}

// Remove removes, trying again while p is busy.
func (b busyOS) Remove(p string) error {
	return b.retry("remove", p, func() error { return b.OS.Remove(p) })
}

func (b busyOS) retry(what, p string, fn func() error) error {
	err := retry.Do(b.ctx, ops.BusyFileWait, fileBusy, fn)
	var ex *retry.ExhaustedError
	if !errors.As(err, &ex) {
		return err
	}
	return fmt.Errorf("%s %s: the file stayed in use for %s: %w; %s", what, p, ex.Elapsed.Round(100*time.Millisecond), err, b.holder(p))
}

// fileBusy reports whether err is what a file that another handle holds
// gives.
func fileBusy(err error) bool {
	c := winos.Code(err)
	return c == winos.ErrSharingViolation || c == winos.ErrAccessDenied
}

// holder names who likely holds p: a process that runs it, else the
// usual suspects.
func (b busyOS) holder(p string) string {
	if procs, err := b.OS.Processes(); err == nil {
		for _, pr := range procs {
			if strings.EqualFold(pr.Path, p) {
				return fmt.Sprintf("process %d (%s) runs it", pr.PID, procName(pr))
			}
		}
	}
	return "no process runs it: most likely an antivirus or EDR scanner or the search indexer has it open (they open fresh and just-run executables), " +
		"or another program reads it (a swdt status hashing it); try again, or exclude the directory from scanning"
}
