package winos

import (
	"errors"
	"fmt"
	"io/fs"
)

// Errno is a Win32 error code. The real layer passes the system's codes
// through; the simulated layer reports the same codes for the same
// situations.
type Errno uint32

// The Win32 error codes handlers tell apart.
const (
	ErrFileNotFound              Errno = 2
	ErrPathNotFound              Errno = 3
	ErrAccessDenied              Errno = 5
	ErrInvalidParameter          Errno = 87
	ErrSharingViolation          Errno = 32
	ErrFileExists                Errno = 80
	ErrDirNotEmpty               Errno = 145
	ErrInvalidLevel              Errno = 124
	ErrAlreadyExists             Errno = 183
	ErrDependentServicesRunning  Errno = 1051
	ErrServiceRequestTimeout     Errno = 1053
	ErrServiceAlreadyRunning     Errno = 1056
	ErrServiceDisabled           Errno = 1058
	ErrServiceDoesNotExist       Errno = 1060
	ErrServiceCannotAcceptCtrl   Errno = 1061
	ErrServiceNotActive          Errno = 1062
	ErrServiceDependencyFail     Errno = 1068
	ErrServiceMarkedForDelete    Errno = 1072
	ErrServiceExists             Errno = 1073
	ErrServiceSpecificError      Errno = 1066
	ErrProcessAborted            Errno = 1067
	ErrServiceNeverStarted       Errno = 1077
	ErrServiceDependencyDeleted  Errno = 1075
	ErrServiceLogonFailed        Errno = 1069
	ErrServiceStartHang          Errno = 1070
	ErrServiceNotInExe           Errno = 1083
	ErrExeMachineTypeMismatch    Errno = 216
	ErrBadExeFormat              Errno = 193
	ErrServiceDatabaseLocked     Errno = 1055
	ErrCircularDependency        Errno = 1059
	ErrServiceNoThread           Errno = 1054
	ErrInvalidServiceControl     Errno = 1052
	ErrNotFound                  Errno = 1168
	ErrPrivilegeNotHeld          Errno = 1314
	ErrInvalidServiceAccount     Errno = 1057
	ErrServiceCannotStopExitCode Errno = 1064
	ErrInvalidOwner              Errno = 1307
)

// Error is the code's number; the message is the caller's (see Error).
func (e Errno) Error() string { return fmt.Sprintf("Win32 error %d", uint32(e)) }

// Is lets errors.Is(err, fs.ErrNotExist) and fs.ErrExist work on codes.
func (e Errno) Is(target error) bool {
	switch target {
	case fs.ErrNotExist:
		return e == ErrFileNotFound || e == ErrPathNotFound
	case fs.ErrExist:
		return e == ErrFileExists || e == ErrAlreadyExists
	case fs.ErrPermission:
		return e == ErrAccessDenied
	}
	return false
}

// Error is a failed call: what was asked (Op), of what (Target: a path,
// a service, a registry key), the code, and the system's message.
type Error struct {
	Op      string
	Target  string
	Code    Errno
	Message string
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = e.Code.Error()
	}
	return fmt.Sprintf("%s %s: %s (error %d)", e.Op, e.Target, msg, uint32(e.Code))
}

// Unwrap returns the code, so errors.Is(err, winos.ErrServiceDoesNotExist)
// works.
func (e *Error) Unwrap() error { return e.Code }

// Code returns err's Win32 code, or 0 when it carries none.
func Code(err error) Errno {
	var c Errno
	if errors.As(err, &c) {
		return c
	}
	return 0
}
