//go:build !linux

package clustertest

import (
	"errors"
	"net"
	"time"
)

// DialFrom is Linux's: NetworkSkip skips first elsewhere.
func (n *Network) DialFrom(ns, addr string, timeout time.Duration) (net.Conn, error) {
	return nil, errors.New("network namespaces are Linux's")
}
