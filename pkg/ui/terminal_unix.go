//go:build !windows

package ui

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// watchResize signals each SIGWINCH, which the kernel sends when the
// terminal's size changes.
func watchResize(ctx context.Context) <-chan struct{} {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGWINCH)
	out := make(chan struct{}, 1)
	go func() {
		defer signal.Stop(sig)
		for {
			select {
			case <-ctx.Done():
				return
			case <-sig:
				select {
				case out <- struct{}{}:
				default: // one pending change is enough
				}
			}
		}
	}()
	return out
}
