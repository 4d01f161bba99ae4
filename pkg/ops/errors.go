package ops

import (
	"errors"
	"fmt"
)

// Kind is the machine-readable class of a failed op, as the result
// envelope carries it. It is the whole contract between the agent, which
// reports a kind, and swdt, which acts on it: code on either side names a
// kind by its constant, never by its spelling.
//
// A Kind is also an error, so that errors.Is(err, ops.KindNotFound)
// reports whether err is (or wraps) an *Error of that kind.
type Kind string

// Error returns the kind's spelling; it makes a Kind usable as an
// errors.Is target.
func (k Kind) Error() string { return string(k) }

// The error kinds an op reports.
const (
	// KindBadRequest: the request could not be decoded or is missing
	// what the op needs. Nothing was done.
	KindBadRequest Kind = "bad-request"
	// KindInvalid: a value of the request is not acceptable on this node.
	KindInvalid Kind = "invalid"
	// KindInvalidArgument: a program swdt ran refused its arguments.
	KindInvalidArgument Kind = "invalid-argument"
	// KindUsage: the agent was started with a command line it does not
	// understand.
	KindUsage Kind = "usage"
	// KindUnknownOp: the agent has no op of that name (an older agent).
	KindUnknownOp Kind = "unknown-op"
	// KindTimeout: a wait on the node ran out, or the op's context ended.
	KindTimeout Kind = "timeout"
	// KindNotFound: a file, folder, service or package does not exist.
	KindNotFound Kind = "not-found"
	// KindExists: what the op was to create is already there.
	KindExists Kind = "exists"
	// KindAccessDenied: Windows refused access.
	KindAccessDenied Kind = "access-denied"
	// KindLocked: a file is held open by another process (sharing
	// violation), or the node's swap lock is held by another run.
	KindLocked Kind = "locked"
	// KindBusy: a file stayed held by another process past the op's
	// bounded retries.
	KindBusy Kind = "busy"
	// KindLockLost: the node's swap lock was taken over while the op ran.
	KindLockLost Kind = "lock-lost"
	// KindUnfinished: an earlier swap's journal must be repaired first.
	KindUnfinished Kind = "unfinished"
	// KindChanged: a destination changed since swdt inspected it.
	KindChanged Kind = "changed"
	// KindTooLarge: a request or file is over the op's limit.
	KindTooLarge Kind = "too-large"
	// KindService: the service manager reported a failure.
	KindService Kind = "service"
	// KindMarkedForDeletion: the service is marked for deletion and goes
	// once every handle to it is closed (or at the next reboot).
	KindMarkedForDeletion Kind = "marked-for-deletion"
	// KindRegisterFailed: a program's own service registration failed.
	KindRegisterFailed Kind = "register-failed"
	// KindUnregisterFailed: a program's own service removal failed.
	KindUnregisterFailed Kind = "unregister-failed"
	// KindUnsafeFolder: a folder swdt would write to or run from could
	// have been created or written by an ordinary user.
	KindUnsafeFolder Kind = "unsafe-folder"
	// KindUnsafeFootprint: swdt's own folder on the node (AgentDir) is
	// not safe and could not be made so.
	KindUnsafeFootprint Kind = "unsafe-footprint"
	// KindUntrustedBackup: a backup beside a destination was not written
	// by an administrator, so it is not put back.
	KindUntrustedBackup Kind = "untrusted-backup"
	// KindInstaller: an installer failed.
	KindInstaller Kind = "installer"
	// KindDownload: a download on the node failed.
	KindDownload Kind = "download"
	// KindRebootRefused: the node refused to reboot.
	KindRebootRefused Kind = "reboot-refused"
	// KindIO: any other Windows error.
	KindIO Kind = "io"
	// KindException: anything else the agent did not expect.
	KindException Kind = "exception"
	// KindProtocol is never reported by an agent: swdt gives it to an op
	// whose output it could not understand.
	KindProtocol Kind = "protocol"
	// KindInjected is never reported by an agent: simnode's faults give it
	// to an op they make fail.
	KindInjected Kind = "injected"
)

// Error is an op that ran and reported failure, or whose output could
// not be understood.
type Error struct {
	// Op is the op's name.
	Op string
	// Kind is the op's error class.
	Kind Kind
	// Message is the op's own explanation.
	Message string
	// Stderr is what the agent (or the shell that could not start it)
	// wrote to stderr, if anything: its tail.
	Stderr string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("op %s failed (%s): %s", e.Op, e.Kind, e.Message)
	if e.Stderr != "" {
		msg += "\n" + e.Stderr
	}
	return msg
}

// Is reports whether target is the error's Kind, so that
// errors.Is(err, ops.KindLocked) works through any wrapping.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

// KindOf returns the kind of the *Error err is or wraps, or "" when err
// is not an op's failure.
func KindOf(err error) Kind {
	var oe *Error
	if errors.As(err, &oe) {
		return oe.Kind
	}
	return ""
}
