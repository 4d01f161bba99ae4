package agent

import (
	"errors"
	"syscall"

	"golang.org/x/sys/windows"
)

// errnoRefused reports a connection refused: Winsock's WSAECONNREFUSED,
// which syscall.ECONNREFUSED does not match on Windows.
func errnoRefused(err error) bool {
	var e syscall.Errno
	return errors.As(err, &e) && e == windows.WSAECONNREFUSED
}

// errnoUnreachable reports no route to the network or host.
func errnoUnreachable(err error) bool {
	var e syscall.Errno
	return errors.As(err, &e) && (e == windows.WSAENETUNREACH || e == windows.WSAEHOSTUNREACH)
}
