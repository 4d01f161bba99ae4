package ops

import "fmt"

// Ops of the per-node swap lock and journal (docs/reference.md, "Reliability").
//
// One run at a time may stage and swap binaries on a node: it takes the
// node lock (C:\Program Files\swdt\swap.lock) first, renews it while it
// works and releases it at the end. The swap writes a journal
// (C:\Program Files\swdt\swap-journal.json) before it changes anything and
// removes it when every service runs again, so that a swap cut short by a
// killed swdt or a lost node is finished or rolled back by the next run.
var (
	// NodeLockRenew proves that the holder is alive, and records the
	// files it stages (removed if its lock is ever broken as stale).
	NodeLockRenew = register[NodeLockRenewRequest, NodeLockRenewResponse]("node-lock-renew")
	// NodeUnlock releases the lock held by a run.
	NodeUnlock = register[NodeUnlockRequest, NodeUnlockResponse]("node-unlock")
)

// Where the lock and the journal live on a node.
const (
	LockPath    = AgentDir + `\swap.lock`
	JournalPath = AgentDir + `\swap-journal.json`
	// SwapResultPath holds the result of the last swap op, for a repair
	// that finds the swap finished after its connection dropped.
	SwapResultPath = AgentDir + `\swap-result.json`
)

// SwapMutex is the node-wide named mutex (Global\swdt-swap) the swap op
// holds for its whole life, and that the repair waits on before it
// touches the journal: an agent outlives a dropped connection, so the
// swap may still be running when its run's repair starts.
const SwapMutex = "swdt-swap"

// SwapFinished is the result a swap op left on the node.
type SwapFinished struct {
	// RunID is the run whose swap it was.
	RunID string `json:"runId"`
	// Response is what the op answered, when it succeeded.
	Response *ServiceSwapResponse `json:"response,omitempty"`
	// Kind and Error are its failure, when it failed.
	Kind  Kind   `json:"kind,omitempty"`
	Error string `json:"error,omitempty"`
}

// LockOwner identifies one swdt run.
type LockOwner struct {
	// RunID is unique per run (random hex).
	RunID string `json:"runId"`
	// Host is the machine swdt runs on; PID its process there.
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// PIDSpace names where PID means something (boot ID and PID
	// namespace, "" when unknown) and PIDStart when that process started
	// ("" when unknown): another run judges the holder dead by its PID
	// only in the same PID space, and a live PID with another start time
	// is another process.
	PIDSpace string `json:"pidSpace,omitempty"`
	PIDStart string `json:"pidStart,omitempty"`
	// Command is what the run is, e.g. "swdt kubernetes".
	Command string `json:"command"`
	// Started is when the run took the lock (RFC 3339, swdt's clock).
	Started string `json:"started"`
}

// String names the owner for messages.
func (o LockOwner) String() string {
	return fmt.Sprintf("%s run %s (pid %d on %s, since %s)", o.Command, o.RunID, o.PID, o.Host, o.Started)
}

// NodeLockRequest asks for the lock.
type NodeLockRequest struct {
	Owner LockOwner `json:"owner"`
	// StaleAfterMs is how long the lock stays valid without a renewal;
	// another run may then break it.
	StaleAfterMs int64 `json:"staleAfterMs"`
	// Break names the RunID of a holder the caller knows to be dead (its
	// process is gone from the caller's own machine): that lock is broken
	// even though it is not stale yet.
	Break string `json:"break,omitempty"`
	// Staged are the files the run will stage (removed if its lock is
	// ever broken as stale), recorded with the lock as it is taken.
	Staged []string `json:"staged,omitempty"`
	// Destinations are the binaries of the caller's node file: breaking
	// a stale lock removes only the holder's staged files beside them
	// (<destination>.swdt-new-<holder's run ID>[.swdt-zst]).
	Destinations []string `json:"destinations,omitempty"`
}

// LockHolder is a lock as another run found it.
type LockHolder struct {
	Owner LockOwner `json:"owner"`
	// AgeMs is the time since the holder last renewed the lock.
	AgeMs int64 `json:"ageMs"`
	// StaleAfterMs is the holder's own validity.
	StaleAfterMs int64 `json:"staleAfterMs"`
	// Staged are the files the holder stages.
	Staged []string `json:"staged,omitempty"`
}

// Stale reports whether the holder has not renewed the lock in time.
func (h LockHolder) Stale() bool { return h.AgeMs > h.StaleAfterMs }

// NodeLockResponse says whether the caller holds the lock now.
type NodeLockResponse struct {
	// Acquired is true when the caller holds the lock.
	Acquired bool `json:"acquired"`
	// Holder is the run that holds it when Acquired is false.
	Holder *LockHolder `json:"holder,omitempty"`
	// Broken is the stale (or dead) holder whose lock was broken to
	// take it, and Removed the files it had staged that were deleted.
	Broken  *LockHolder `json:"broken,omitempty"`
	Removed []string    `json:"removed,omitempty"`
}

// NodeLockRenewRequest renews the caller's lock.
type NodeLockRenewRequest struct {
	RunID string `json:"runId"`
	// Staged, when not nil, replaces the list of files the run stages.
	Staged []string `json:"staged,omitempty"`
}

// NodeLockRenewResponse is empty: a lock that is no longer the caller's
// is a failure of kind "lock-lost".
type NodeLockRenewResponse struct{}

// NodeUnlockRequest releases the caller's lock.
type NodeUnlockRequest struct {
	RunID string `json:"runId"`
}

// NodeUnlockResponse says whether the lock was the caller's.
type NodeUnlockResponse struct {
	Released bool `json:"released"`
}

// SwapJournal is what the node records of a swap in progress, before it
// changes anything; the swap removes it when it is over. A journal found
// by a later run is an unfinished swap.
type SwapJournal struct {
	// Owner is the run that swapped (empty RunID: a swap without a lock,
	// such as a restart of wins).
	Owner LockOwner `json:"owner"`
	// Started is when the swap began, in the node's clock (RFC 3339).
	Started string `json:"started"`
	// Request is the swap as asked for: items, orders and timings.
	Request ServiceSwapRequest `json:"request"`
	// Stopped lists, in order, the services the swap stopped or was
	// about to stop.
	Stopped []string `json:"stopped"`
	// Recovery holds the failure actions the swap switched off, as they
	// were, to be put back.
	Recovery []JournalRecovery `json:"recovery"`
	// Failures holds, by service, why the swap was rolling an item back.
	Failures map[string]string `json:"failures,omitempty"`
}

// JournalRecovery is one service's failure actions before the swap.
type JournalRecovery struct {
	Service string `json:"service"`
	// Actions are (type, delay in ms) pairs; types as winos.Recovery*.
	Actions []JournalRecoveryAction `json:"actions"`
	// ResetPeriodMs is the failure count's reset period.
	ResetPeriodMs int64 `json:"resetPeriodMs"`
}

// JournalRecoveryAction is one failure action.
type JournalRecoveryAction struct {
	Type    int   `json:"type"`
	DelayMs int64 `json:"delayMs"`
}

// UnfinishedSwap is a journal as provision-inspect reports it.
type UnfinishedSwap struct {
	Journal SwapJournal `json:"journal"`
	// InProgress is true while the journal's owner still holds a valid
	// lock: the swap is running, not interrupted.
	InProgress bool `json:"inProgress"`
}
