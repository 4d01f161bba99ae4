package machine

import (
	"errors"
	"fmt"

	"sigs.k8s.io/swdt/pkg/ops"
)

// OpFailure is an error an op handler returns to report a typed failure:
// it becomes {"ok":false,"error":{"kind":..,"message":..}} on the wire, as
// Stop-SwdtOp does in a real op.
type OpFailure struct {
	Kind    ops.Kind
	Message string
}

func (e *OpFailure) Error() string { return string(e.Kind) + ": " + e.Message }

// Fail returns an *OpFailure of kind with a formatted message.
func Fail(kind ops.Kind, format string, args ...any) error {
	return &OpFailure{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Win32 error codes the simulated service control manager and file system
// report.
const (
	CodeFileNotFound             = 2
	CodePathNotFound             = 3
	CodeAccessDenied             = 5
	CodeSharingViolation         = 32
	CodeFileExists               = 80
	CodeDirNotEmpty              = 145
	CodeAlreadyExists            = 183
	CodeDependentServicesRunning = 1051
	CodeServiceAlreadyRunning    = 1056
	CodeServiceDisabled          = 1058
	CodeServiceDoesNotExist      = 1060
	CodeServiceCannotAcceptCtrl  = 1061
	CodeServiceNotActive         = 1062
	CodeServiceDependencyFail    = 1068
	CodeServiceMarkedForDelete   = 1072
	CodeServiceExists            = 1073
	CodeInvalidParameter         = 87
)

// ServiceError is a service control manager error.
type ServiceError struct {
	Service string
	// Code is the Win32 error code (CodeServiceNotActive...).
	Code    int
	Message string
}

func (e *ServiceError) Error() string {
	return fmt.Sprintf("service %s: %s (error %d)", e.Service, e.Message, e.Code)
}

// OpErrorKind maps the code to an op error kind.
func (e *ServiceError) OpErrorKind() ops.Kind {
	switch e.Code {
	case CodeServiceDoesNotExist, CodeFileNotFound, CodePathNotFound:
		return ops.KindNotFound
	case CodeSharingViolation:
		return ops.KindLocked
	case CodeServiceExists:
		return ops.KindExists
	default:
		return ops.KindService
	}
}

func svcErr(name string, code int) error {
	msg := map[int]string{
		CodeFileNotFound:             "The system cannot find the file specified.",
		CodeSharingViolation:         "The process cannot access the file because it is being used by another process.",
		CodeDependentServicesRunning: "A stop control has been sent to a service that other running services are dependent on.",
		CodeServiceAlreadyRunning:    "An instance of the service is already running.",
		CodeServiceDisabled:          "The service cannot be started, either because it is disabled or because it has no enabled devices associated with it.",
		CodeServiceDoesNotExist:      "The specified service does not exist as an installed service.",
		CodeServiceCannotAcceptCtrl:  "The service cannot accept control messages at this time.",
		CodeServiceNotActive:         "The service has not been started.",
		CodeServiceDependencyFail:    "The dependency service or group failed to start.",
		CodeServiceMarkedForDelete:   "The specified service has been marked for deletion.",
		CodeServiceExists:            "The specified service already exists.",
		CodeInvalidParameter:         "The parameter is incorrect.",
	}[code]
	return &ServiceError{Service: name, Code: code, Message: msg}
}

// FileError is a file system error with Windows' wording.
type FileError struct {
	Op   string
	Path string
	// Code is the Win32 error code (CodeSharingViolation...).
	Code int
	Err  error
}

// Sentinels FileError unwraps to, for errors.Is.
var (
	ErrNotExist         = errors.New("not found")
	ErrExist            = errors.New("already exists")
	ErrSharingViolation = errors.New("sharing violation")
	ErrNotEmpty         = errors.New("directory not empty")
	ErrIsDir            = errors.New("is a directory")
)

func (e *FileError) Error() string {
	switch e.Code {
	case CodeSharingViolation:
		return fmt.Sprintf("The process cannot access the file '%s' because it is being used by another process.", e.Path)
	case CodeFileNotFound:
		return fmt.Sprintf("Cannot find path '%s' because it does not exist.", e.Path)
	case CodePathNotFound:
		return fmt.Sprintf("Could not find a part of the path '%s'.", e.Path)
	case CodeAlreadyExists, CodeFileExists:
		return fmt.Sprintf("Cannot create '%s' because a file or directory with the same name already exists.", e.Path)
	case CodeDirNotEmpty:
		return fmt.Sprintf("The directory '%s' is not empty.", e.Path)
	case CodeAccessDenied:
		return fmt.Sprintf("Access to the path '%s' is denied.", e.Path)
	}
	if e.Err != nil {
		return fmt.Sprintf("%s '%s': %v", e.Op, e.Path, e.Err)
	}
	return fmt.Sprintf("%s '%s' failed (error %d)", e.Op, e.Path, e.Code)
}

func (e *FileError) Unwrap() error { return e.Err }

// OpErrorKind maps the code to an op error kind.
func (e *FileError) OpErrorKind() ops.Kind {
	switch e.Code {
	case CodeFileNotFound, CodePathNotFound:
		return ops.KindNotFound
	case CodeSharingViolation:
		return ops.KindLocked
	case CodeAlreadyExists, CodeFileExists:
		return ops.KindExists
	case CodeAccessDenied:
		return ops.KindAccessDenied
	}
	return ops.KindIO
}

func fileErr(op string, p winPath, code int) *FileError {
	var sentinel error
	switch code {
	case CodeFileNotFound, CodePathNotFound:
		sentinel = ErrNotExist
	case CodeAlreadyExists, CodeFileExists:
		sentinel = ErrExist
	case CodeSharingViolation:
		sentinel = ErrSharingViolation
	case CodeDirNotEmpty:
		sentinel = ErrNotEmpty
	case CodeAccessDenied:
		sentinel = ErrIsDir
	}
	return &FileError{Op: op, Path: string(p), Code: code, Err: sentinel}
}
