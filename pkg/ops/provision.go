package ops

import "strings"

// Ops of the hot-swap (DESIGN.md §4).
var (
	// ProvisionInspect reads, in one round trip, what the plan needs: each
	// destination's size, hash and version, and the state of each service
	// and of every service that depends on it. With a Lock it first takes
	// the node's swap lock (as node-lock does), so that a run locks and
	// inspects in one op.
	ProvisionInspect = register[ProvisionInspectRequest, ProvisionInspectResponse]("provision-inspect")
	// ServiceRegister creates a service that runs a program already on the
	// node (a provisioner's register step).
	ServiceRegister = register[ServiceRegisterRequest, ServiceRegisterResponse]("service-register")
	// ServiceConfigure changes an existing service's command line, start
	// type, display name and dependencies to those of a register request
	// (a provisioner's register that the node's service no longer
	// matches); the service is not restarted.
	ServiceConfigure = register[ServiceRegisterRequest, ServiceConfigureResponse]("service-configure")
	// FilesRemove deletes leftover files (staged uploads after a failure).
	FilesRemove = register[FilesRemoveRequest, FilesRemoveResponse]("files-remove")
	// ServiceSwap stops services, renames staged binaries into place, starts
	// services, runs health checks and rolls a failed binary back, all on
	// the node in one op so that downtime does not depend on round trips.
	ServiceSwap = register[ServiceSwapRequest, ServiceSwapResponse]("service-swap")
	// SwapRecover finishes or rolls back the swap recorded in the node's
	// journal (an interrupted swap), then removes the journal.
	SwapRecover = register[SwapRecoverRequest, SwapRecoverResponse]("swap-recover")
)

// ProvisionTarget names one service and the binary that feeds it.
type ProvisionTarget struct {
	// Service is the Windows service name.
	Service string `json:"service"`
	// Destination is the absolute Windows path of the binary.
	Destination string `json:"destination"`
	// Known is what swdt recorded of the destination last time. When the
	// file's size and last-write time still match, the op reports Known's
	// digest instead of reading the whole file again (rsync's quick check;
	// renames keep the time, so a swapped binary keeps its record).
	Known *FileInfo `json:"known,omitempty"`
	// Register is the service's configuration as the node file wants it
	// (a provisioner's register): when the service exists and differs,
	// the response's Drift says how.
	Register *ServiceRegisterRequest `json:"register,omitempty"`
}

// ProvisionInspectRequest lists the targets to inspect.
type ProvisionInspectRequest struct {
	Targets []ProvisionTarget `json:"targets"`
	// Lock, when set, takes the node's swap lock for its owner before
	// anything is read. When another run holds it, nothing is inspected:
	// the response has only Locked.
	Lock *NodeLockRequest `json:"lock,omitempty"`
}

// FileInfo describes one file on the node.
type FileInfo struct {
	// Path is the Windows path asked about.
	Path string `json:"path"`
	// Exists is false when there is no file at Path.
	Exists bool `json:"exists"`
	// Size in bytes.
	Size int64 `json:"size"`
	// SHA256 is the lower-case hex digest.
	SHA256 string `json:"sha256"`
	// Version is the executable's file version, if it has one.
	Version string `json:"version,omitempty"`
	// ModTicks is the last-write time in UTC, as .NET ticks (100 ns since
	// 0001-01-01).
	ModTicks int64 `json:"modTicks"`
	// Cached is true when SHA256 came from the request's Known record.
	Cached bool `json:"cached,omitempty"`
}

// ServiceInfo describes one Windows service.
type ServiceInfo struct {
	// Name is the service name.
	Name string `json:"name"`
	// Exists is false when no such service is registered.
	Exists bool `json:"exists"`
	// Status is Stopped, StartPending, Running, StopPending, ...
	Status string `json:"status,omitempty"`
	// StartType is Automatic, Manual or Disabled.
	StartType string `json:"startType,omitempty"`
	// PID of the service process while it runs, else 0.
	PID int `json:"pid,omitempty"`
	// BinaryPath is the service's command line as registered.
	BinaryPath string `json:"binaryPath,omitempty"`
	// Executable is the program the service runs: the executable of its
	// command line or, for a service wrapped by nssm, the program nssm
	// starts (its Parameters\Application).
	Executable string `json:"executable,omitempty"`
	// Wrapper is nssm's path when the service is wrapped by nssm.
	Wrapper string `json:"wrapper,omitempty"`
	// Via says how the service runs its program: "" directly, "nssm",
	// or "nssm + PowerShell" (nssm running a script that starts it).
	Via string `json:"via,omitempty"`
	// DependsOn are the services this one needs.
	DependsOn []string `json:"dependsOn"`
	// Dependents are the services that need this one (direct only).
	Dependents []string `json:"dependents"`
}

// ProvisionInspectResponse is what the plan is made from.
type ProvisionInspectResponse struct {
	// Files has one entry per target, in request order.
	Files []FileInfo `json:"files"`
	// Services holds every target service and, transitively, every
	// service that depends on one.
	Services []ServiceInfo `json:"services"`
	// Unfinished is the node's swap journal when there is one: a swap
	// in progress, or one that was interrupted and must be repaired
	// before anything else.
	Unfinished *UnfinishedSwap `json:"unfinished,omitempty"`
	// Lock is the run that holds the node's swap lock, if any.
	Lock *LockHolder `json:"lock,omitempty"`
	// Locked answers the request's Lock (nil without one).
	Locked *NodeLockResponse `json:"locked,omitempty"`
	// MissingDirs lists the directories of destinations that do not
	// exist (a staged file needs its directory).
	MissingDirs []string `json:"missingDirs,omitempty"`
	// UnsafeFolders lists the destinations' folders, and the folders
	// above them, that an account other than Administrators, SYSTEM or
	// TrustedInstaller owns, each with what to do: that account may
	// replace the programs swdt puts there.
	UnsafeFolders []string `json:"unsafeFolders,omitempty"`
	// RemovedLeftovers lists the staged files of earlier runs (interrupted
	// or killed before their swap) that the inspect removed: it holds the
	// lock, and no swap is unfinished.
	RemovedLeftovers []string `json:"removedLeftovers,omitempty"`
	// Drift has, for each target whose existing service differs from its
	// Register, the differences ("args: [--v=2] -> [--v=4]"), by the
	// target's index in the request.
	Drift map[int][]string `json:"drift,omitempty"`
	// Current is, for each target in Drift, the service's configuration
	// as it is now, as a register request: what a run restores when the
	// service does not come up with the new one.
	Current map[int]ServiceRegisterRequest `json:"current,omitempty"`
	// Arch is the machine's processor architecture, as NodeFacts reports
	// it: each binary is checked against it before it is staged.
	Arch string `json:"arch,omitempty"`
}

// FilesRemoveRequest lists files to delete; missing files are not an error.
type FilesRemoveRequest struct {
	Paths []string `json:"paths"`
}

// FilesRemoveResponse lists what was removed.
type FilesRemoveResponse struct {
	Removed []string `json:"removed"`
}

// HealthCheckSpec is one check of a started service (exactly one field set).
type HealthCheckSpec struct {
	NamedPipe string   `json:"namedPipe,omitempty"`
	TCPPort   int32    `json:"tcpPort,omitempty"`
	Command   []string `json:"command,omitempty"`
}

// SwapItem is one binary to put into place.
type SwapItem struct {
	// Service is fed by the binary.
	Service string `json:"service"`
	// Destination is where the service runs the binary from.
	Destination string `json:"destination"`
	// Staged is the upload (Destination + ".swdt-new-" + the run's ID:
	// unique per run).
	Staged string `json:"staged"`
	// Backup is where the old binary is kept (Destination + ".swdt-bak").
	Backup string `json:"backup"`
	// SHA256, when set, is the digest the staged file must have: the
	// swap checks it before it stops anything and fails the item (nothing
	// renamed, the staged file removed) when the file has another.
	SHA256 string `json:"sha256,omitempty"`
	// OldSHA256 is the digest of the binary being replaced, as the plan
	// saw it: a repair names which binary it left in place.
	OldSHA256 string `json:"oldSha256,omitempty"`
	// HealthChecks must pass after the service starts.
	HealthChecks []HealthCheckSpec `json:"healthChecks"`
	// Encoded, when set, is an encoded upload (Staged + ".swdt-zst") that
	// the swap first decodes into Staged, before it stops anything (as
	// stage-decode does): Encoding says how, Reference is a patch's
	// reference (the destination). The decoded file must have SHA256;
	// the encoded upload is removed whatever the outcome.
	Encoded   string `json:"encoded,omitempty"`
	Encoding  string `json:"encoding,omitempty"`
	Reference string `json:"reference,omitempty"`
	// Size is the length of the binary: decoding Encoded (or Data) stops,
	// and fails, as soon as it would write more, so that a damaged or
	// hostile stream cannot fill the node's disk before its digest is
	// checked.
	Size int64 `json:"size,omitempty"`
	// Data, when set, is the encoded upload itself, sent in the request
	// instead of as the file Encoded (a small patch: no upload round
	// trips); it is decoded and checked the same way.
	Data []byte `json:"data,omitempty"`
	// Attached says the encoded upload follows the request on the op's
	// stdin, as an attachment (ops.WriteAttachment), in the order of the
	// items: a patch made while the op runs, decoded as it arrives and
	// checked the same way.
	Attached bool `json:"attached,omitempty"`
	// Fallback says the caller can send the file again another way when
	// Encoded does not decode into it: the swap then stops and renames
	// nothing and reports the item in Undecoded. Without it such an item
	// fails alone.
	Fallback bool `json:"fallback,omitempty"`
}

// ServiceSwapRequest describes one swap transaction.
type ServiceSwapRequest struct {
	// Owner is the run that holds the node's lock (empty RunID for a
	// swap outside a locked run). The swap refuses, nothing stopped,
	// while another run holds a valid lock.
	Owner LockOwner `json:"owner"`
	// StopOrder lists services to stop, dependents first.
	StopOrder []string `json:"stopOrder"`
	// Items are the binaries to put into place.
	Items []SwapItem `json:"items"`
	// StartOrder lists services to start, dependencies first.
	StartOrder []string `json:"startOrder"`
	// StopTimeoutMs is how long a stop may take before the process is
	// killed.
	StopTimeoutMs int `json:"stopTimeoutMs"`
	// StartTimeoutMs is how long a service may take to reach Running.
	StartTimeoutMs int `json:"startTimeoutMs"`
	// SettleMs is how long a started service must stay Running.
	SettleMs int `json:"settleMs"`
	// HealthTimeoutMs is how long health checks are retried.
	HealthTimeoutMs int `json:"healthTimeoutMs"`
	// Unlock releases the owner's lock when the swap is done (its
	// response says whether it did). The swap renews the lock itself
	// while it runs.
	Unlock bool `json:"unlock,omitempty"`
	// ServiceChecks are health checks of services in StartOrder that no
	// item feeds (a service just registered and started for the first
	// time), by service name; a failure is reported in NotStarted.
	ServiceChecks map[string][]HealthCheckSpec `json:"serviceChecks,omitempty"`
	// Undo marks the swap that swap-undo makes of its request: each
	// item's staged file is the backup of an earlier swap (kept, never
	// removed, by a repair) and a failure is not rolled back. A repair of
	// its journal names the binaries as the user knows them: the one put
	// back is the old one.
	Undo bool `json:"undo,omitempty"`
	// Lock, when set, has the swap take the node's lock for Owner first,
	// as provision-inspect does, in the same op: a run on a connection it
	// kept (--watch) that knows the node from its last inspect. While
	// another run holds the lock the swap does nothing and says so in
	// Locked.
	Lock *NodeLockRequest `json:"lock,omitempty"`
	// Expect, with Lock, are the services as the run planned with them
	// (an earlier inspect's): once it holds the lock, the swap compares
	// them with the services as they are (all but PID) and, when any
	// differs, does nothing and says what in Changed.
	Expect []ServiceInfo `json:"expect,omitempty"`
	// ExpectFiles, with Lock, are the destinations as the run planned with
	// them (path, size and last-write time from the hash cache: what a
	// patch was made against): one that differs makes the swap do
	// nothing and say what in Changed, as a service does.
	ExpectFiles []FileInfo `json:"expectFiles,omitempty"`
}

// Swap item results.
const (
	SwapResultSwapped    = "swapped"
	SwapResultRolledBack = "rolled-back"
	SwapResultFailed     = "failed"
)

// SwapItemResult is the outcome for one item.
type SwapItemResult struct {
	Service     string `json:"service"`
	Destination string `json:"destination"`
	// Result is swapped, rolled-back or failed.
	Result string `json:"result"`
	// Error says what went wrong (empty when swapped).
	Error string `json:"error,omitempty"`
	// ExitCode is the service's last Win32 exit code after a failure.
	ExitCode int `json:"exitCode,omitempty"`
	// Events are the service's last event-log lines after a failure.
	Events []string `json:"events,omitempty"`
	// Notes say what the swap did besides the swap itself (an old binary
	// put back from its backup before anything stopped).
	Notes []string `json:"notes,omitempty"`
	// DowntimeMs is from the start of this service's stop to its Running
	// again (after rollback if any); 0 when the swap did not stop it (it
	// was not running) or it is not Running at the end.
	DowntimeMs int64 `json:"downtimeMs"`
	// File is the binary now at Destination as the swap verified it
	// (when swapped): size, last-write time and SHA-256.
	File *FileInfo `json:"file,omitempty"`
}

// ServiceSwapResponse reports the transaction.
type ServiceSwapResponse struct {
	Items []SwapItemResult `json:"items"`
	// Killed lists services whose process had to be killed to stop.
	Killed []string `json:"killed"`
	// NotStarted lists services that were to be started but are not
	// Running at the end, with the reason.
	NotStarted []ServiceProblem `json:"notStarted"`
	// AlsoStopped lists running services that depend on a service the
	// swap stopped but were not in StopOrder: Windows refuses to stop a
	// service while a dependent runs, so the swap stopped them first and
	// started them again afterwards.
	AlsoStopped []string `json:"alsoStopped"`
	// Downtime has one entry per service the swap stopped (those of
	// StopOrder that were not already Stopped, and AlsoStopped), in the
	// order they were stopped.
	Downtime []ServiceDowntime `json:"downtime"`
	// RecoveryNotRestored lists services whose failure actions the swap
	// switched off (to kill a process, or while a new binary was on
	// trial) and could not put back.
	RecoveryNotRestored []ServiceProblem `json:"recoveryNotRestored,omitempty"`
	// RecoveryUnknown lists services whose failure actions the system
	// could not report (QueryServiceConfig2 answers ERROR_INVALID_LEVEL,
	// as Wine does): the swap took them as none and switched nothing off.
	RecoveryUnknown []string `json:"recoveryUnknown,omitempty"`
	// Undecoded lists the items with Fallback whose encoded upload did not
	// decode into the expected file. The swap then stopped nothing,
	// renamed nothing and kept the lock; the other items' staged files
	// are decoded and stay for the next try.
	Undecoded []SwapUndecoded `json:"undecoded,omitempty"`
	// Unlocked is true when the swap released the owner's lock (Unlock).
	Unlocked bool `json:"unlocked,omitempty"`
	// Locked is the answer to the request's Lock: when not Acquired,
	// nothing was done.
	Locked *NodeLockResponse `json:"locked,omitempty"`
	// Changed says how the services differ from the request's Expect;
	// the swap then did nothing.
	Changed []string `json:"changed,omitempty"`
}

// SwapUndecoded is an item whose encoded upload did not decode.
type SwapUndecoded struct {
	Destination string `json:"destination"`
	// Error says why (a damaged stream, another reference, a digest
	// that differs).
	Error string `json:"error"`
}

// ServiceDowntime is how long one service the swap stopped was down.
type ServiceDowntime struct {
	Service string `json:"service"`
	// DowntimeMs is from the start of the service's stop to its Running
	// again; for a service that is not Running at the end of the op (see
	// NotStarted), up to the end of the op.
	DowntimeMs int64 `json:"downtimeMs"`
	// Running is true when the service was Running at the end of the op.
	Running bool `json:"running"`
}

// ServiceProblem names a service and what is wrong with it.
type ServiceProblem struct {
	Service string `json:"service"`
	Error   string `json:"error"`
}

// SwapRecoverRequest asks to repair the node's unfinished swap.
type SwapRecoverRequest struct {
	// RunID is the caller's: it must hold the node's lock, or the lock
	// must be free or stale.
	RunID string `json:"runId"`
	// Staged are the caller's own staged files, removed too.
	Staged []string `json:"staged,omitempty"`
	// Trusted are the binaries of the caller's node file. The repair acts
	// only on journal items whose destination is one of them and whose
	// staged file and backup are swdt's names beside it, and runs only
	// their health checks (never the journal's); anything else the
	// journal names is reported in Ignored and left alone.
	Trusted []TrustedBinary `json:"trusted,omitempty"`
}

// TrustedBinary is one binary of the caller's node file.
type TrustedBinary struct {
	Service      string            `json:"service,omitempty"`
	Destination  string            `json:"destination"`
	HealthChecks []HealthCheckSpec `json:"healthChecks,omitempty"`
}

// Which binary a repair left at a destination.
const (
	RecoveredNew     = "new"
	RecoveredOld     = "old"
	RecoveredMissing = "missing"
	RecoveredUnknown = "unknown"
)

// SwapRecoverItem is what a repair left for one item.
type SwapRecoverItem struct {
	Service     string `json:"service"`
	Destination string `json:"destination"`
	// Binary is new (the swap's verified binary passed its checks), old
	// (the binary from before the swap), missing or unknown (neither
	// digest matches: left as it is).
	Binary string `json:"binary"`
	// SHA256 is the digest of the binary now in place.
	SHA256 string `json:"sha256,omitempty"`
	// Error says why the new binary was rolled back, or what failed.
	Error string `json:"error,omitempty"`
}

// SwapRecoverResponse reports what was repaired.
type SwapRecoverResponse struct {
	// Found is false when the node had no unfinished swap.
	Found bool `json:"found"`
	// Finished is, when the node had no unfinished swap, the result the
	// request's run's swap op left: it ran to its end after its
	// connection dropped.
	Finished *SwapFinished `json:"finished,omitempty"`
	// Journal is the unfinished swap that was repaired.
	Journal *SwapJournal `json:"journal,omitempty"`
	// Items has one entry per item of the journal.
	Items []SwapRecoverItem `json:"items"`
	// Started lists the services the repair started.
	Started []string `json:"started"`
	// NotStarted lists services that would not start.
	NotStarted []ServiceProblem `json:"notStarted"`
	// RecoveryNotRestored lists services whose failure actions could not
	// be put back.
	RecoveryNotRestored []ServiceProblem `json:"recoveryNotRestored,omitempty"`
	// Removed lists staged files that were deleted.
	Removed []string `json:"removed"`
	// Ignored says what the node's journal named that no run of the
	// caller's node file could have written (and why): left alone.
	Ignored []string `json:"ignored,omitempty"`
}

// Runs reports whether the service runs path as its program: Executable
// and path name the same file as written (case-insensitive, either
// slash). It is true when that cannot be told: the service does not exist,
// or a wrapper does not record its program.
func (s ServiceInfo) Runs(path string) bool {
	norm := func(p string) string { return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(p), "/", `\`)) }
	return !s.Exists || s.Executable == "" || norm(s.Executable) == norm(path)
}

// ServiceRegisterRequest describes a service to create. The agent builds
// its command line from Program and Args, each quoted as one argument;
// nothing goes through a shell.
type ServiceRegisterRequest struct {
	// Name is the service name.
	Name string `json:"name"`
	// Program is the executable the service runs (it must exist).
	Program string `json:"program"`
	// Args are passed to Program, one element each.
	Args []string `json:"args,omitempty"`
	// DisplayName defaults to Name.
	DisplayName string `json:"displayName,omitempty"`
	// Description is the service's description.
	Description string `json:"description,omitempty"`
	// StartType is Automatic (default) or Manual.
	StartType string `json:"startType,omitempty"`
	// DependsOn lists services that must run first.
	DependsOn []string `json:"dependsOn,omitempty"`
}

// ServiceConfigureResponse reports a service whose configuration was
// brought in line with a ServiceRegisterRequest (service-configure).
type ServiceConfigureResponse struct {
	// Changed lists what was changed, as Drift words it; empty when the
	// service already matched.
	Changed []string `json:"changed"`
	// Service is the service as it is now.
	Service ServiceInfo `json:"service"`
}

// ServiceRegisterResponse reports the service created.
type ServiceRegisterResponse struct {
	// Service is the new service, stopped.
	Service ServiceInfo `json:"service"`
}
