//go:build windows

package ui

import (
	"context"
	"time"
)

// resizePoll is how often the console's size is read on Windows, whose
// consoles send no signal when they are resized.
const resizePoll = 500 * time.Millisecond

// watchResize signals every resizePoll; Resizes passes on only changes.
func watchResize(ctx context.Context) <-chan struct{} {
	out := make(chan struct{}, 1)
	go func() {
		tick := time.NewTicker(resizePoll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out
}
