//go:build !windows

package agent

import (
	"errors"
	"syscall"
)

// errnoRefused reports a connection refused (ECONNREFUSED).
func errnoRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// errnoUnreachable reports no route to the network or host.
func errnoUnreachable(err error) bool {
	return errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.EHOSTUNREACH)
}
