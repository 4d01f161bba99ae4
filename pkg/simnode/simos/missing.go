package simos

import (
	"fmt"
	"slices"

	"sigs.k8s.io/swdt/pkg/winos"
)

// The Win32 calls Faults.MissingAPIs can take away, each failing as Wine
// 8.0 fails it (stripped-down and hardened images fail some of them too).
const (
	// MissingAPIFailureActions: QueryServiceConfig2
	// (SERVICE_CONFIG_FAILURE_ACTIONS) fails with ERROR_INVALID_LEVEL.
	MissingAPIFailureActions = "failure-actions"
	// MissingAPIPipeListing: FindFirstFile on \\.\pipe\ fails with
	// ERROR_BAD_DEV_TYPE; a pipe can still be found by its name.
	MissingAPIPipeListing = "pipe-listing"
	// MissingAPIPowerShell: powershell.exe is Wine's stub, which runs no
	// script and prints nothing.
	MissingAPIPowerShell = "powershell"
)

// stubScript is the error of a script-backed call when powershell.exe
// is a stub: the fixed script printed nothing (winos.ErrScriptSilent).
func (o simOS) stubScript(s winos.Script) error {
	if !slices.Contains(o.n.Faults().MissingAPIs, MissingAPIPowerShell) {
		return nil
	}
	return fmt.Errorf("script %s (exit code 0): %w", s.Name(), winos.ErrScriptSilent)
}

// errBadDevType is ERROR_BAD_DEV_TYPE.
const errBadDevType winos.Errno = 66

// missing returns the error of a call the node lacks, or nil.
func (o simOS) missing(api, op, target string) error {
	if !slices.Contains(o.n.Faults().MissingAPIs, api) {
		return nil
	}
	switch api {
	case MissingAPIFailureActions:
		return &winos.Error{Op: op, Target: target, Code: winos.ErrInvalidLevel, Message: "The system call level is not correct."}
	default:
		return &winos.Error{Op: op, Target: target, Code: errBadDevType, Message: "The network resource type is not correct."}
	}
}

// PipeExists looks name up among the pipes of running services, as
// WaitNamedPipe finds a pipe by its name (which ignores case).
func (o simOS) PipeExists(name string) (bool, error) { return o.n.PipeExists(name), nil }
