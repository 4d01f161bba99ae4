package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The swap journal (ops.JournalPath) is written ahead: each save comes
// before the change it announces (a service stopped, failure actions
// switched off, a rollback), so a swap killed at any point left a journal
// that covers everything it did. A save writes the whole journal to
// journalTmp first, then replaces the journal by a rename (winos has no
// replacing rename): a journal that exists is always complete, and when
// only journalTmp exists the kill came between the two steps and it is
// complete too. A torn journalTmp next to a journal is the journal's
// next version, never acted on: the older journal is the truth.

// journalTmp is where a journal is written before it is renamed in.
const journalTmp = ops.JournalPath + ".tmp"

// journalSave writes j as the node's journal.
func journalSave(w winos.OS, j *ops.SwapJournal) error {
	raw, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode the swap journal: %w", err)
	}
	if err := footprint(w); err != nil {
		return fmt.Errorf("the swap journal: %w", err)
	}
	if err := w.WriteFile(journalTmp, raw); err != nil {
		return fmt.Errorf("write the swap journal: %w", err)
	}
	if err := removeFree(w, ops.JournalPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replace the swap journal: %w", err)
	}
	if err := w.Rename(journalTmp, ops.JournalPath); err != nil {
		return fmt.Errorf("replace the swap journal: %w", err)
	}
	return nil
}

// journalRead returns the node's journal, nil when there is none. A
// journal file that Administrators or SYSTEM do not own is removed unread
// (and said so in notes, when not nil).
func journalRead(w winos.OS, notes *[]string) (*ops.SwapJournal, error) {
	for _, p := range []string{ops.JournalPath, journalTmp} {
		if err := discardUntrusted(w, p, notes); err != nil {
			return nil, err
		}
	}
	raw, err := readSmallFile(w, ops.JournalPath)
	if err == nil {
		var j ops.SwapJournal
		if err := json.Unmarshal(raw, &j); err != nil {
			return nil, fmt.Errorf("the swap journal %s cannot be read (%v): check the services on the node, then delete it", ops.JournalPath, err)
		}
		return &j, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the swap journal: %w", err)
	}
	raw, err = readSmallFile(w, journalTmp)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the swap journal: %w", err)
	}
	var j ops.SwapJournal
	if json.Unmarshal(raw, &j) != nil {
		// Torn while the first version was written: the swap had not
		// changed anything yet.
		return nil, nil
	}
	return &j, nil
}

// journalRemove deletes the journal: the swap is over.
func journalRemove(w winos.OS) error {
	for _, p := range []string{ops.JournalPath, journalTmp} {
		if err := w.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the swap journal: %w", err)
		}
	}
	return nil
}

// journalRecovery converts failure actions to the journal's form.
func journalRecovery(service string, r winos.Recovery) ops.JournalRecovery {
	out := ops.JournalRecovery{Service: service, ResetPeriodMs: r.ResetPeriod.Milliseconds(), Actions: []ops.JournalRecoveryAction{}}
	for _, a := range r.Actions {
		out.Actions = append(out.Actions, ops.JournalRecoveryAction{Type: a.Type, DelayMs: a.Delay.Milliseconds()})
	}
	return out
}

// fromJournal converts the journal's failure actions back.
func fromJournal(r ops.JournalRecovery) swapRecovery {
	rec := winos.Recovery{ResetPeriod: time.Duration(r.ResetPeriodMs) * time.Millisecond}
	for _, a := range r.Actions {
		rec.Actions = append(rec.Actions, winos.RecoveryAction{Type: a.Type, Delay: time.Duration(a.DelayMs) * time.Millisecond})
	}
	return swapRecovery{service: r.Service, recovery: rec}
}
