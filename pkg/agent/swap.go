package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The service-swap op: one hot-swap transaction, run on the node so that
// downtime does not depend on network round trips.
//
//  1. Stop the services of StopOrder (dependents first; a running
//     dependent StopOrder left out is stopped too), each until its process
//     has exited; a stop that outlives the stop timeout has its process
//     killed.
//  2. Per item: keep the old binary as the backup and rename the staged
//     file into place (Windows renames a running executable but never
//     overwrites one, so nothing is ever copied onto a destination).
//  3. Start StartOrder and every other service the swap stopped, each
//     reaching Running before the next starts; one settle period for all
//     of them; each must still be Running; then the swapped items' health
//     checks.
//  4. When a swapped item failed: stop the started services, keep its new
//     binary as .swdt-failed, put the backup back and start them again.
//
// The items' failure actions are off for the whole op, and those of any
// service whose process is killed: a crash of a new binary must not
// restart it behind the rollback's back (nor hide the crash from the
// settle check), and no binary is renamed while its service could be
// restarted. They are put back at the end, on every path.
//
// Before anything stops, the swap checks that the caller holds the
// node's lock and that no earlier swap is unfinished, decodes encoded
// uploads into their staged files (as stage-decode does), and checks that
// each staged file has the digest swdt sent (an item whose file differs
// fails and its staged file is removed, and no service is stopped for it
// alone). An upload that does not decode, when swdt can send it again
// another way, ends the op there with nothing stopped. The swap then
// writes the journal (journal.go) and keeps it ahead of every change;
// swap-recover finishes or rolls back from it a swap that was cut short.
// It renews the caller's lock while it runs and, when asked, releases it
// at the end: a run's last round trip to the node.

// swapHealthPoll is the pause between rounds of health checks.
const swapHealthPoll = 250 * time.Millisecond

// swapCommandMin is the least time a health-check command is given, even
// with a shorter health timeout.
const swapCommandMin = time.Second

// swapEventsLimit bounds reading a failed service's event log.
const swapEventsLimit = 15 * time.Second

// swapEventsMax is how many event-log lines a failure reports.
const swapEventsMax = 5

// swapRun is one service-swap op in progress (its records:
// swap_state.go).
type swapRun struct {
	w   winos.OS
	req ops.ServiceSwapRequest
	// started is when the op started: the clock of downtimes, and the
	// start of the event-log lines a failure reports.
	started     time.Time
	stopTimeout time.Duration
	// items holds a record per item of req.Items, by index.
	items []itemRecord
	// services holds a record per service the op deals with.
	services map[svcKey]*serviceRecord
	// stopped lists the services the swap stopped, in order;
	// alsoStopped the dependents it stopped that StopOrder left out, and
	// killed those whose process it killed.
	stopped     []string
	alsoStopped []string
	killed      []string
	// recovery holds the failure actions switched off, to put back.
	recovery []swapRecovery
	// recoveryUnknown lists the services whose failure actions the
	// system could not report (ops.ServiceSwapResponse.RecoveryUnknown).
	recoveryUnknown []string
	// journal is the swap's journal once written (nil before).
	journal *ops.SwapJournal
	// renamed is true once a destination was renamed.
	renamed bool
	// attachments is the op's input after its request: the encoded
	// bytes of the items that say Attached, in order (nil: none).
	attachments *bufio.Reader
}

// swapRecovery is a service's failure actions as they were before the
// swap switched them off.
type swapRecovery struct {
	service  string
	recovery winos.Recovery
}

// serviceSwap runs the swap, then puts back the failure actions it
// switched off; when it failed half-way it also starts again every
// service it had stopped.
func serviceSwap(ctx context.Context, w winos.OS, req ops.ServiceSwapRequest, attachments *bufio.Reader) (ops.ServiceSwapResponse, error) {
	unlock, _, err := lockSwapMutex(ctx, w, swapMutexWait, nothingStopped)
	if err != nil {
		return ops.ServiceSwapResponse{}, err
	}
	defer unlock()
	s := newSwapRun(w, req)
	s.attachments = attachments
	var locked *ops.NodeLockResponse
	if req.Lock != nil {
		// The lock and the swap in one op (a kept connection).
		if req.Lock.Owner.RunID != req.Owner.RunID {
			return ops.ServiceSwapResponse{}, Fail(ops.KindBadRequest, "the swap's lock request is for run %q, the swap for run %q", req.Lock.Owner.RunID, req.Owner.RunID)
		}
		l, err := nodeLock(ctx, w, *req.Lock)
		if err != nil {
			return ops.ServiceSwapResponse{}, beforeStop(err)
		}
		if locked = &l; !l.Acquired {
			return ops.ServiceSwapResponse{Locked: locked}, nil
		}
		if len(req.Expect) > 0 || len(req.ExpectFiles) > 0 {
			changed, err := servicesChanged(w, req.Expect)
			if err == nil {
				var files []string
				files, err = filesChanged(w, req.ExpectFiles)
				changed = append(changed, files...)
			}
			if err != nil {
				return ops.ServiceSwapResponse{}, beforeStop(err)
			}
			if len(changed) > 0 {
				// The run inspects and plans again, holding the lock.
				return ops.ServiceSwapResponse{Locked: locked, Changed: changed}, nil
			}
		}
	}
	if err := lockCheck(ctx, w, req.Owner.RunID, nothingStopped); err != nil {
		return ops.ServiceSwapResponse{}, err
	}
	stopRenewing := func() {}
	if req.Owner.RunID != "" {
		stopRenewing = renewWhile(w, req.Owner.RunID)
	}
	defer stopRenewing()
	if j, err := journalRead(w, nil); err != nil {
		return ops.ServiceSwapResponse{}, beforeStop(err)
	} else if j != nil {
		return ops.ServiceSwapResponse{}, Fail(ops.KindUnfinished, "the node has an unfinished swap (%s, started %s); %s: run swdt again, it repairs that swap first", journalOwner(j), j.Started, nothingStopped)
	}
	resp, err := s.run(ctx)
	resp.RecoveryUnknown, resp.Locked = s.recoveryUnknown, locked
	problems := s.restoreRecovery()
	if err == nil {
		resp.RecoveryNotRestored = problems
		// The result goes first: a repair that finds no journal reports it.
		if err := swapResultSave(w, req.Owner.RunID, resp, nil); err != nil {
			return resp, fmt.Errorf("the swap is done, but: %w", err)
		}
		if err := journalRemove(w); err != nil {
			return resp, fmt.Errorf("the swap is done, but: %w", err)
		}
		if req.Unlock && req.Owner.RunID != "" && len(resp.Undecoded) == 0 {
			// A failed release is not the swap's failure: swdt then
			// releases the lock itself.
			stopRenewing()
			released, _ := nodeUnlock(ctx, w, ops.NodeUnlockRequest{RunID: req.Owner.RunID})
			resp.Unlocked = released.Released
		}
		return resp, nil
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("the swap was cut short after %s: %w", time.Since(s.started).Round(time.Millisecond), err)
	}
	var notes []string
	if s.journal != nil && len(s.stopped) == 0 && !s.renamed && len(problems) == 0 {
		// Nothing changed: there is nothing to repair.
		if rmErr := journalRemove(w); rmErr != nil {
			notes = append(notes, rmErr.Error())
		}
	}
	if len(s.stopped) > 0 {
		notes = append(notes, s.restartStopped())
	}
	for _, p := range problems {
		notes = append(notes, "service "+p.Service+": "+p.Error)
	}
	err = swapNote(err, notes)
	if saveErr := swapResultSave(w, req.Owner.RunID, resp, err); saveErr != nil {
		err = swapNote(err, []string{saveErr.Error()})
	}
	return resp, err
}

// newSwapRun prepares a swap of req: a record per item, and one for
// each item's service that lists the items.
func newSwapRun(w winos.OS, req ops.ServiceSwapRequest) *swapRun {
	s := &swapRun{
		w: w, req: req, started: time.Now(), stopTimeout: time.Duration(req.StopTimeoutMs) * time.Millisecond,
		items: make([]itemRecord, len(req.Items)), services: map[svcKey]*serviceRecord{},
	}
	for i, it := range req.Items {
		s.items[i].result = ops.SwapItemResult{Service: it.Service, Destination: it.Destination}
		r := s.service(it.Service)
		r.items = append(r.items, i)
	}
	return s
}

// journalOwner names the run of a journal.
func journalOwner(j *ops.SwapJournal) string {
	if j.Owner.RunID == "" {
		return "a swap outside a locked run"
	}
	return j.Owner.String()
}

// save writes the journal, once there is one.
func (s *swapRun) save() error {
	if s.journal == nil {
		return nil
	}
	return journalSave(s.w, s.journal)
}

// swapNote adds notes to a failure's message, keeping its kind.
func swapNote(err error, notes []string) error {
	if len(notes) == 0 {
		return err
	}
	kind, msg := failureOf(err)
	return &Failure{Kind: kind, Message: msg + "; " + strings.Join(notes, "; ")}
}

// restartStopped asks every service the swap stopped to start again,
// after the op failed half-way: no service may stay down because of it.
// It does not wait (the op's time may be up) and says what it did.
func (s *swapRun) restartStopped() string {
	var asked, failed []string
	for i := len(s.stopped) - 1; i >= 0; i-- {
		name := s.stopped[i]
		asked = append(asked, name)
		if err := s.w.StartService(name); err != nil && winos.Code(err) != winos.ErrServiceAlreadyRunning {
			failed = append(failed, fmt.Sprintf("%s (%v)", name, err))
		}
	}
	msg := "the services it had stopped were asked to start again (" + strings.Join(asked, ", ") + ")"
	if len(failed) > 0 {
		msg += ", but these refused: " + strings.Join(failed, ", ")
	}
	return msg
}

// run is the swap itself (see the top of this file).
func (s *swapRun) run(ctx context.Context) (ops.ServiceSwapResponse, error) {
	resp := ops.ServiceSwapResponse{
		Items: []ops.SwapItemResult{}, Killed: []string{}, NotStarted: []ops.ServiceProblem{},
		AlsoStopped: []string{}, Downtime: []ops.ServiceDowntime{},
	}
	items := s.req.Items
	undecoded, err := s.decode(ctx)
	if err != nil {
		return resp, err
	}
	if len(undecoded) > 0 {
		// swdt sends these again: nothing stops before it has.
		resp.Undecoded = undecoded
		for _, r := range s.results() {
			if r.Result == ops.SwapResultFailed {
				resp.Items = append(resp.Items, r)
			}
		}
		return resp, nil
	}
	if err := s.check(); err != nil {
		return resp, err
	}
	active := s.narrow()
	if len(active) == 0 && len(items) > 0 {
		// Every staged file changed since it was verified: nothing to do.
		resp.Items = s.results()
		return resp, nil
	}
	journal := s.req
	journal.Items = nil
	for _, i := range active {
		journal.Items = append(journal.Items, items[i])
	}
	s.journal = &ops.SwapJournal{Owner: s.req.Owner, Started: s.started.UTC().Format(time.RFC3339), Request: journal,
		Stopped: []string{}, Recovery: []ops.JournalRecovery{}, Failures: map[string]string{}}
	if err := s.save(); err != nil {
		return resp, beforeStop(err)
	}
	for _, i := range active {
		if items[i].Service == "" {
			continue // a plain file push: no service to guard
		}
		if err := s.recoveryOff(items[i].Service); err != nil {
			return resp, &beforeStopError{step: "switch off the failure actions of service " + items[i].Service + " for the swap", cause: err}
		}
	}

	for _, name := range s.req.StopOrder {
		if err := s.stop(ctx, name); err != nil {
			return resp, err
		}
	}
	for _, i := range active {
		s.rename(i)
	}

	start := s.startList()
	if err := s.startAll(ctx, start); err != nil {
		return resp, err
	}
	if err := s.healthAll(ctx, start); err != nil {
		return resp, err
	}

	rollback := false
	for _, name := range start {
		svc := s.service(name)
		if svc.failure == nil || s.req.Undo {
			// An undo is not undone: its "backup" is the binary it undid.
			continue
		}
		for _, i := range svc.items {
			if s.items[i].result.Result != ops.SwapResultSwapped {
				continue
			}
			if _, ok, err := provisionStatFile(s.w, items[i].Backup); err != nil {
				return resp, err
			} else if ok {
				s.items[i].rollback, rollback = true, true
			}
		}
	}
	if rollback {
		if err := s.rollback(ctx, start); err != nil {
			return resp, err
		}
		start = s.startList()
	}

	s.report(&resp, start)
	return resp, nil
}

// healthAll runs the health checks of the swapped items of every service
// that started (and the request's ServiceChecks of a service no item
// feeds), and records a failure as the service's.
func (s *swapRun) healthAll(ctx context.Context, start []string) error {
	type pending struct {
		svc     *serviceRecord
		checks  []ops.HealthCheckSpec
		failure string
	}
	var todo []*pending
	for _, name := range start {
		svc := s.service(name)
		if svc.failure != nil {
			continue
		}
		p := &pending{svc: svc}
		if checks := s.req.ServiceChecks[name]; len(checks) > 0 && len(svc.items) == 0 {
			p.checks = checks
		}
		for _, i := range svc.items {
			if s.items[i].result.Result == ops.SwapResultSwapped {
				p.checks = append(p.checks, s.req.Items[i].HealthChecks...)
			}
		}
		if len(p.checks) > 0 {
			todo = append(todo, p)
		}
	}
	// One timeout for all: each round checks every service that has not
	// passed yet (one after another: the Windows layer is used from one
	// goroutine), so a swap of several services that do not come up is
	// rolled back after the health timeout, not after one per service.
	_, err := poll(ctx, time.Duration(s.req.HealthTimeoutMs)*time.Millisecond, swapHealthPoll, func() (bool, error) {
		var still []*pending
		for _, p := range todo {
			failure, failed, err := s.healthRound(ctx, p.checks)
			if err != nil {
				return false, err
			}
			if failure == "" {
				continue
			}
			p.failure = failure
			// A wins pipe still missing once wins has been Running for
			// winsPipeGrace never comes: v0.16 and later have none.
			if up := p.svc.runningAt; p.svc.running && isWinsPipe(failed.NamedPipe) && time.Since(s.started)-up >= winsPipeGrace {
				p.svc.failure = &serviceFailure{health: true, cause: fmt.Sprintf("%s although the service has been Running for %s", failure, (time.Since(s.started) - up).Round(100*time.Millisecond))}
				continue
			}
			still = append(still, p)
		}
		todo = still
		return len(todo) == 0, nil
	})
	if err != nil {
		return err
	}
	for _, p := range todo {
		p.svc.failure = &serviceFailure{health: true, cause: p.failure}
	}
	return nil
}

// report fills the response: the services that are not running and why,
// the items' final results, and every stopped service's downtime.
func (s *swapRun) report(resp *ops.ServiceSwapResponse, start []string) {
	for _, name := range start {
		svc := s.service(name)
		if svc.failure == nil {
			continue
		}
		failure := svc.failure.String()
		resp.NotStarted = append(resp.NotStarted, ops.ServiceProblem{Service: name, Error: failure})
		for _, i := range svc.items {
			switch item := &s.items[i]; {
			case item.result.Result == ops.SwapResultSwapped:
				item.result.Result, item.result.Error = ops.SwapResultFailed, failure
			case item.result.Result == ops.SwapResultFailed && !item.rollback:
				item.result.Error = strings.Join([]string{item.result.Error, failure}, "; ")
			}
		}
	}
	for i, it := range s.req.Items {
		if st := s.items[i].verified; st != nil && s.items[i].result.Result == ops.SwapResultSwapped {
			// A rename keeps size and time.
			s.items[i].result.File = &ops.FileInfo{Path: it.Destination, Exists: true, Size: st.Size, SHA256: strings.ToLower(it.SHA256), ModTicks: dotNetTicks(st.ModTime)}
		}
	}
	end := time.Since(s.started)
	for _, name := range s.stopped {
		svc := s.service(name)
		d := ops.ServiceDowntime{Service: name, DowntimeMs: (end - svc.stoppedAt).Milliseconds()}
		if svc.running && svc.failure == nil {
			d.DowntimeMs, d.Running = (svc.runningAt - svc.stoppedAt).Milliseconds(), true
			for _, i := range svc.items {
				s.items[i].result.DowntimeMs = d.DowntimeMs
			}
		}
		resp.Downtime = append(resp.Downtime, d)
	}
	resp.Items = s.results()
	resp.Killed = append(resp.Killed, s.killed...)
	resp.AlsoStopped = append(resp.AlsoStopped, s.alsoStopped...)
}

// decode turns each item's encoded upload (a file, the request's Data or
// its attachment) into its staged file, before anything stops. An item
// that does not decode is returned when swdt can send it again
// (Fallback), else it fails (in its result); either way its staged file
// and upload are removed.
func (s *swapRun) decode(ctx context.Context) ([]ops.SwapUndecoded, error) {
	var undecoded []ops.SwapUndecoded
	var broken error // the attachments cannot be read past a damaged one
	for i, it := range s.req.Items {
		if it.Encoded == "" {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, beforeStop(err)
		}
		var data io.Reader
		if it.Data != nil {
			data = bytes.NewReader(it.Data)
		}
		var err error
		switch {
		case it.Attached && s.attachments == nil:
			err = errors.New("the request says its encoded bytes follow it, and nothing followed")
		case it.Attached && broken != nil:
			err = fmt.Errorf("an attachment before it could not be read: %w", broken)
		case it.Attached:
			att := ops.AttachmentReader(s.attachments)
			_, _, err = decodeStaged(s.w, ops.StageDecodeItem{Encoded: it.Encoded, Encoding: it.Encoding, Reference: it.Reference, Staged: it.Staged, SHA256: it.SHA256, Size: it.Size}, att)
			// Read to its end, whatever the decode left: the next one
			// follows it. A file decoded and verified is kept even when
			// its attachment's end is damaged; the ones after it are not
			// read.
			if _, derr := io.Copy(io.Discard, att); derr != nil && !errors.Is(derr, ops.ErrAttachmentFailed) {
				broken = derr
			}
		default:
			_, _, err = decodeStaged(s.w, ops.StageDecodeItem{Encoded: it.Encoded, Encoding: it.Encoding, Reference: it.Reference, Staged: it.Staged, SHA256: it.SHA256, Size: it.Size}, data)
		}
		switch {
		case err == nil:
			// A leftover upload is only clutter; the file is verified.
			s.items[i].decoded = true
		case it.Fallback:
			undecoded = append(undecoded, ops.SwapUndecoded{Destination: it.Destination, Error: err.Error()})
		default:
			s.items[i].result.Result, s.items[i].result.Error = ops.SwapResultFailed, err.Error()
		}
	}
	return undecoded, nil
}

// check makes sure, before anything stops, that every staged file is
// there and every service to stop exists, and clears old backups so that
// the renames cannot fail on them. A staged file whose digest is not the
// item's fails its item (in its result) and is removed, nothing renamed.
func (s *swapRun) check() error {
	if err := s.securePrograms(); err != nil {
		return err
	}
	for i, it := range s.req.Items {
		item := &s.items[i]
		if item.result.Result == ops.SwapResultFailed {
			continue
		}
		st, ok, err := provisionStatFile(s.w, it.Staged)
		if err != nil {
			return err
		}
		if !ok {
			return failBeforeStop(ops.KindNotFound, "staged file %s is missing", it.Staged)
		}
		if it.SHA256 == "" {
			continue
		}
		if !item.decoded {
			if why, err := s.verifyStaged(it); err != nil {
				return beforeStop(err)
			} else if why != "" {
				if err := removeIfExists(s.w, it.Staged); err != nil {
					why += "; " + err.Error()
				}
				item.result.Result, item.result.Error = ops.SwapResultFailed, why
				continue
			}
		}
		item.verified = &st
	}
	for _, name := range s.req.StopOrder {
		if _, err := s.w.Service(name); errors.Is(err, winos.ErrServiceDoesNotExist) {
			return failBeforeStop(ops.KindNotFound, "service %s does not exist", name)
		} else if err != nil {
			return err
		}
	}
	for i, it := range s.req.Items {
		item := &s.items[i]
		if item.result.Result == ops.SwapResultFailed {
			continue
		}
		if _, err := s.w.Stat(it.Backup); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if _, hasDest, err := provisionStatFile(s.w, it.Destination); err != nil {
			return beforeStop(err)
		} else if !hasDest {
			note, err := s.restoreBackup(it)
			if err != nil {
				return beforeStop(err)
			}
			item.result.Notes = append(item.result.Notes, note)
			continue
		}
		if err := removeFree(s.w, it.Backup); err != nil {
			return &beforeStopError{step: "clear the backup of an earlier swap", cause: err}
		}
	}
	return nil
}

// restoreBackup handles a missing destination beside its backup (a swap
// or repair cut short between its renames): the backup may be the only
// copy of the old binary, so it goes back into place before anything
// stops, and the swap keeps it as the backup to roll back to. A backup
// that Administrators or SYSTEM do not own is not the old binary (another
// account created that name): it is left alone and never put into place.
func (s *swapRun) restoreBackup(it ops.SwapItem) (string, error) {
	owner, ok, err := adminsOwn(s.w, it.Backup)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", Fail(ops.KindUntrustedBackup, "%s is missing and %s is owned by %s, not by Administrators or SYSTEM: it is not swdt's backup "+
			"and was not used; put the right binary at %s (or delete the backup) as an administrator and run again", it.Destination, it.Backup, owner, it.Destination)
	}
	if err := s.w.Rename(it.Backup, it.Destination); err != nil {
		return "", fmt.Errorf("%s is missing; put back its backup %s: %w", it.Destination, it.Backup, err)
	}
	return fmt.Sprintf("%s was missing and its backup %s from an earlier swap was there: the backup was put back first, and kept as the binary to roll back to", it.Destination, it.Backup), nil
}

// verifyStaged hashes a staged file: "" when it has the item's digest,
// else why not.
func (s *swapRun) verifyStaged(it ops.SwapItem) (string, error) {
	owner, ok, err := adminsOwn(s.w, it.Staged)
	if err != nil {
		return "", fmt.Errorf("verify the staged file %s: %w", it.Staged, err)
	}
	if !ok {
		return fmt.Sprintf("staged file %s is owned by %s, not by Administrators or SYSTEM: swdt did not upload it (another account created that name first) "+
			"and its owner could still change it; the binary was not swapped, remove the file and run again", it.Staged, owner), nil
	}
	sum, err := hashFile(s.w, it.Staged)
	if err != nil {
		return "", fmt.Errorf("verify the staged file %s: %w", it.Staged, err)
	}
	if strings.EqualFold(sum, it.SHA256) {
		return "", nil
	}
	return fmt.Sprintf("staged file %s has SHA-256 %s, want %s: the upload was corrupted, or the file changed since swdt verified it (another program or run wrote it); the binary was not swapped, run again", it.Staged, sum, it.SHA256), nil
}

// sealed reports whether item i's staged file, as st describes it now,
// needs no second hash before its rename (DESIGN.md §9): this op decoded
// it and hashed it as it wrote it, it has the size and last-write time it
// had then, Administrators or SYSTEM (or the agent's own administrator
// account) own it, and its DACL lets nobody else change it. Whoever could
// have changed its bytes since is then an administrator, who could
// replace the destination itself. Anything else, an error reading the
// owner or DACL included, means hashing it again.
func (s *swapRun) sealed(i int, st winos.FileInfo) bool {
	prev := s.items[i].verified
	if !s.items[i].decoded || prev == nil || st.Size != prev.Size || !st.ModTime.Equal(prev.ModTime) {
		return false
	}
	return lockedDown(s.w, s.req.Items[i].Staged)
}

// lockedDown reports whether Administrators or SYSTEM (or the agent's own
// administrator account) own p and its DACL lets nobody else change it:
// whoever can change its bytes is then an administrator. An error reading
// the owner or DACL is false.
func lockedDown(w winos.OS, p string) bool {
	owner, admin, err := adminsOwn(w, p)
	if err != nil || !admin {
		return false
	}
	acl, err := w.ACL(p)
	if err != nil {
		return false
	}
	for _, e := range acl.Entries {
		if e.Deny || adminSID(e.SID) || e.SID == owner {
			continue
		}
		if e.Mask&^uint32(winos.FileReadExecute) != 0 {
			return false
		}
	}
	return true
}

// narrow drops the items that failed their check from the swap: the stop
// and start orders keep only the services of the other items and the
// services that depend on them, so that no service is stopped for a
// failed item alone. It returns the indices of the items to swap.
func (s *swapRun) narrow() []int {
	var active []int
	for i := range s.req.Items {
		if s.items[i].result.Result != ops.SwapResultFailed {
			active = append(active, i)
		}
	}
	if len(active) == len(s.req.Items) {
		return active
	}
	var keep []string
	for _, i := range active {
		svc := s.req.Items[i].Service
		if svc == "" {
			continue
		}
		keep = append(keep, svc)
		if deps, err := s.w.Dependents(svc); err == nil {
			keep = append(keep, deps...)
		}
	}
	filter := func(names []string) []string {
		var out []string
		for _, n := range names {
			if swapContains(keep, n) {
				out = append(out, n)
			}
		}
		return out
	}
	s.req.StopOrder, s.req.StartOrder = filter(s.req.StopOrder), filter(s.req.StartOrder)
	return active
}

// rename keeps the old binary of item i as the backup and moves the
// staged file into place; when the second step fails the old binary goes
// back. A verified staged file is hashed again first (unless sealed),
// and not renamed in unless it still has the item's digest and belongs to
// Administrators or SYSTEM.
func (s *swapRun) rename(i int) {
	it, res := s.req.Items[i], &s.items[i].result
	fail := func(err error) {
		res.Result = ops.SwapResultFailed
		res.Error = "could not rename the staged binary into place: " + err.Error()
	}
	if s.items[i].verified != nil {
		// Hashed again right before the rename, whatever its size and
		// time say (they can be kept while the bytes change), unless
		// this op wrote it and only administrators could have changed it
		// since.
		st, err := s.w.Stat(it.Staged)
		if err != nil {
			fail(err)
			return
		}
		if !s.sealed(i, st) {
			why, err := s.verifyStaged(it)
			if err != nil {
				fail(err)
				return
			}
			if why != "" {
				res.Result, res.Error = ops.SwapResultFailed, why
				return
			}
		}
		s.items[i].verified = &st
	}
	_, hadOld, err := provisionStatFile(s.w, it.Destination)
	if err == nil {
		err = s.w.MkdirAll(winpath.Dir(winpath.Clean(it.Destination)))
	}
	if err == nil && hadOld {
		s.renamed = true
		err = s.w.Rename(it.Destination, it.Backup)
	}
	if err != nil {
		fail(err)
		return
	}
	s.renamed = true
	if err := s.w.Rename(it.Staged, it.Destination); err != nil {
		fail(err)
		if hadOld {
			if back := s.w.Rename(it.Backup, it.Destination); back != nil {
				res.Error += fmt.Sprintf("; the old binary stays at %s: %v", it.Backup, back)
			}
		}
		return
	}
	res.Result = ops.SwapResultSwapped
}

// startList is StartOrder followed by every other service the swap
// stopped, dependencies before dependents (the reverse of their stop
// order): no service stays down because StartOrder left it out.
func (s *swapRun) startList() []string {
	list := append([]string(nil), s.req.StartOrder...)
	for i := len(s.stopped) - 1; i >= 0; i-- {
		if !swapContains(list, s.stopped[i]) {
			list = append(list, s.stopped[i])
		}
	}
	return list
}

// startAll starts names in order, settles once for all of them, and
// checks each is still Running. It records in each service's record when
// it reached Running, or why it is not running as it should.
func (s *swapRun) startAll(ctx context.Context, names []string) error {
	for _, r := range s.services {
		r.failure = nil
	}
	for _, name := range names {
		svc := s.service(name)
		failure, err := swapStart(ctx, s.w, name, time.Duration(s.req.StartTimeoutMs)*time.Millisecond)
		if err != nil {
			return err
		}
		if failure != "" {
			svc.failure, svc.running = &serviceFailure{cause: failure}, false
			continue
		}
		svc.running, svc.runningAt = true, time.Since(s.started)
	}
	if len(names) == 0 {
		return nil
	}
	if err := retry.Sleep(ctx, time.Duration(s.req.SettleMs)*time.Millisecond); err != nil {
		return err
	}
	for _, name := range names {
		rec := s.service(name)
		if rec.failure != nil {
			continue
		}
		svc, err := s.w.Service(name)
		var failure string
		if err != nil {
			failure = fmt.Sprintf("could not read the service %d ms after it started: %v", s.req.SettleMs, err)
		} else if svc.Status != winos.StatusRunning {
			failure = fmt.Sprintf("service stopped again within %d ms of starting (status %s)", s.req.SettleMs, svc.Status)
		} else if svc.ProcessExited {
			failure = fmt.Sprintf("service stopped again within %d ms of starting: its process %d exited with code %d (the service control manager still reports %s)",
				s.req.SettleMs, svc.PID, svc.ProcessExitCode, svc.Status)
		}
		if failure != "" {
			rec.failure = &serviceFailure{cause: failure}
		}
	}
	return nil
}

// swapStart starts a service unless it is Running or starting, and waits
// up to limit for Running: "" when it got there, else why not. A service
// that falls back to Stopped has failed to start; it is not waited for.
// Only the end of ctx is an error.
func swapStart(ctx context.Context, w winos.OS, name string, limit time.Duration) (string, error) {
	svc, err := w.Service(name)
	if err != nil {
		return fmt.Sprintf("service could not be started: %v", err), nil
	}
	if svc.Status != winos.StatusRunning && svc.Status != winos.StatusStartPending || svc.ProcessExited {
		if err := w.StartService(name); err != nil && winos.Code(err) != winos.ErrServiceAlreadyRunning {
			status := svc.Status
			if now, serr := w.Service(name); serr == nil {
				status = now.Status
			}
			return fmt.Sprintf("service could not be started (status %s): %v", status, err), nil
		}
	}
	running, err := poll(ctx, limit, swapPollInterval, func() (bool, error) {
		svc, err = w.Service(name)
		return err == nil && (svc.Status == winos.StatusRunning || serviceDown(svc)), err
	})
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case err != nil:
		return fmt.Sprintf("service did not reach Running: %v", err), nil
	case !running:
		return fmt.Sprintf("service did not reach Running within %d ms (status %s)", limit.Milliseconds(), svc.Status), nil
	case svc.Status == winos.StatusStopped:
		return fmt.Sprintf("service stopped while starting (exit code %d)", swapExitCode(svc)), nil
	case svc.ProcessExited:
		return fmt.Sprintf("service stopped while starting: its process %d exited with code %d (the service control manager still reports %s)",
			svc.PID, svc.ProcessExitCode, svc.Status), nil
	}
	return "", nil
}

// serviceDown reports whether svc no longer runs: Stopped, or its
// process has exited although the service control manager did not notice
// (winos.Service.ProcessExited).
func serviceDown(svc winos.Service) bool {
	return svc.Status == winos.StatusStopped || svc.ProcessExited
}

// swapExitCode is a stopped service's exit code: its own when it set one.
func swapExitCode(svc winos.Service) int {
	if svc.ServiceExitCode != 0 {
		return svc.ServiceExitCode
	}
	return svc.ExitCode
}

// rollback puts the old binary of each failed item (those marked
// rollback) back: it records why the service failed, stops the started
// services (dependents first, so none holds one being rolled back), keeps
// the new binary as .swdt-failed, restores the backup and starts them all
// again. The services' records then hold the failures of that second
// start.
func (s *swapRun) rollback(ctx context.Context, start []string) error {
	for i, it := range s.req.Items {
		if !s.items[i].rollback {
			continue
		}
		res := &s.items[i].result
		res.Error = ""
		if f := s.failure(it.Service); f != nil {
			res.Error = f.String()
		}
		if svc, err := s.w.Service(it.Service); err == nil {
			res.ExitCode = swapExitCode(svc)
		}
		ectx, cancel := context.WithTimeout(ctx, swapEventsLimit)
		events, err := s.w.ServiceEvents(ectx, it.Service, s.started, swapEventsMax)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			res.Events = events
		} else {
			// No events is not the same as events that could not be
			// read (a Constrained Language node refuses the script).
			res.Events = []string{"the event log could not be read: " + err.Error()}
		}
	}
	if s.journal != nil {
		for i, it := range s.req.Items {
			if s.items[i].rollback {
				s.journal.Failures[string(keyOf(it.Service))] = s.items[i].result.Error
			}
		}
		if err := s.save(); err != nil {
			return fmt.Errorf("roll back: %w", err)
		}
	}
	for i := len(start) - 1; i >= 0; i-- {
		if err := s.stop(ctx, start[i]); err != nil {
			return err
		}
	}
	for i, it := range s.req.Items {
		if !s.items[i].rollback {
			continue
		}
		failed := ops.FailedPath(it.Destination)
		if _, err := s.w.Stat(failed); err == nil {
			if err := s.w.Remove(failed); err != nil {
				return fmt.Errorf("roll back %s: %w", it.Destination, err)
			}
		}
		if err := s.w.Rename(it.Destination, failed); err != nil {
			return fmt.Errorf("roll back %s: %w", it.Destination, err)
		}
		if err := s.w.Rename(it.Backup, it.Destination); err != nil {
			return fmt.Errorf("roll back %s: %w", it.Destination, err)
		}
		s.items[i].result.Result = ops.SwapResultRolledBack
		s.items[i].result.Error += "; the new binary was kept as " + failed
	}
	if err := s.startAll(ctx, s.startList()); err != nil {
		return err
	}
	for i, it := range s.req.Items {
		if f := s.failure(it.Service); f != nil && s.items[i].rollback {
			s.items[i].result.Result = ops.SwapResultFailed
			s.items[i].result.Error += "; the old binary was restored but did not start either: " + f.String()
		}
	}
	return nil
}

// healthRound runs checks once, in order: "" when all pass, else why
// the first that fails does not, and that check.
func (s *swapRun) healthRound(ctx context.Context, checks []ops.HealthCheckSpec) (string, ops.HealthCheckSpec, error) {
	for _, c := range checks {
		f, err := s.healthCheck(ctx, c)
		if err != nil || f != "" {
			return f, c, err
		}
	}
	return "", ops.HealthCheckSpec{}, nil
}

// healthCheck runs one health check: "" when it passes, else why not.
func (s *swapRun) healthCheck(ctx context.Context, c ops.HealthCheckSpec) (string, error) {
	switch {
	case c.NamedPipe != "":
		want := c.NamedPipe
		if len(want) > len(swapPipePrefix) && strings.EqualFold(want[:len(swapPipePrefix)], swapPipePrefix) {
			want = want[len(swapPipePrefix):]
		}
		found, err := pipesExist(s.w, want)
		if err != nil {
			return "could not look for the named pipe: " + err.Error(), nil
		}
		if found[want] {
			return "", nil
		}
		return "named pipe " + swapPipePrefix + want + " does not exist", nil
	case c.TCPPort != 0:
		listening, err := s.w.PortListening(int(c.TCPPort))
		if err != nil {
			return fmt.Sprintf("could not read the listening TCP ports: %v", err), nil
		}
		if listening {
			return "", nil
		}
		return fmt.Sprintf("nothing listens on TCP port %d", c.TCPPort), nil
	case len(c.Command) > 0:
		return s.runCheck(ctx, c.Command)
	}
	return "empty health check", nil
}

// winsPipeGrace is how long wins may run before its pipes must exist:
// v0.15 creates them within milliseconds of starting.
const winsPipeGrace = time.Second

// isWinsPipe reports whether pipe (with or without \\.\pipe\) is one
// of the pipes of wins's bridge.
func isWinsPipe(pipe string) bool {
	if len(pipe) > len(swapPipePrefix) && strings.EqualFold(pipe[:len(swapPipePrefix)], swapPipePrefix) {
		pipe = pipe[len(swapPipePrefix):]
	}
	return strings.EqualFold(pipe, ops.WinsPipe) || strings.EqualFold(pipe, ops.WinsProxyPipe)
}

// swapPipePrefix is where named pipes live.
const swapPipePrefix = `\\.\pipe\`

// runCheck runs a health-check command, bounded by the health timeout
// (at least swapCommandMin): it passes when the command exits 0.
func (s *swapRun) runCheck(ctx context.Context, argv []string) (string, error) {
	limit := max(time.Duration(s.req.HealthTimeoutMs)*time.Millisecond, swapCommandMin)
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	res, err := s.w.Run(cctx, winos.Command{Path: argv[0], Args: argv[1:]})
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case cctx.Err() != nil:
		return fmt.Sprintf("command %s did not exit within %d ms", argv[0], limit.Milliseconds()), nil
	case err != nil:
		return fmt.Sprintf("command %s could not be started: %v", argv[0], err), nil
	case res.ExitCode == 0:
		return "", nil
	}
	out := strings.TrimSpace(string(res.Stdout) + string(res.Stderr))
	if len(out) > 400 {
		out = strings.ToValidUTF8(out[len(out)-400:], "")
	}
	return fmt.Sprintf("command %s exited %d: %s", argv[0], res.ExitCode, out), nil
}
