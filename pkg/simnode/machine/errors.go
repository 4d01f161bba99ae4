package machine

import (
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

// Win32 error codes the simulated service control manager reports
// (besides the file system's, ntfs.Code*).
const (
	CodeDependentServicesRunning = 1051
	CodeServiceAlreadyRunning    = 1056
	CodeServiceDisabled          = 1058
	CodeServiceDoesNotExist      = 1060
	CodeServiceCannotAcceptCtrl  = 1061
	CodeServiceNotActive         = 1062
	CodeServiceDependencyFail    = 1068
	CodeServiceMarkedForDelete   = 1072
	CodeServiceExists            = 1073
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
