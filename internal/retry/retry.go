// Package retry calls a function again while it fails in a way that
// passes, within a time budget: for errors that a moment cures (a file a
// virus scanner has open), never as a substitute for waiting on an event.
package retry

import (
	"context"
	"fmt"
	"time"
)

// ExhaustedError is a function that still failed when the budget was up.
type ExhaustedError struct {
	// Tries is how often the function ran; Elapsed how long that took.
	Tries   int
	Elapsed time.Duration
	// Err is the last failure.
	Err error
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("%v (still after %d tries in %s)", e.Err, e.Tries, e.Elapsed.Round(time.Millisecond))
}

// Unwrap returns the last failure.
func (e *ExhaustedError) Unwrap() error { return e.Err }

// First and longest pause between tries.
const (
	firstPause = 10 * time.Millisecond
	maxPause   = 200 * time.Millisecond
)

// Do calls fn until it succeeds or fails in a way shouldRetry refuses
// (that error is returned as is), or budget has passed since the first
// try: then the last failure is returned in an *ExhaustedError. The last
// try is made at the end of the budget, not before it. When ctx ends
// first, ctx's error is returned wrapped with the last failure.
func Do(ctx context.Context, budget time.Duration, shouldRetry func(error) bool, fn func() error) error {
	start := time.Now()
	pause := firstPause
	for tries := 1; ; tries++ {
		err := fn()
		if err == nil || !shouldRetry(err) {
			return err
		}
		left := budget - time.Since(start)
		if left <= 0 {
			return &ExhaustedError{Tries: tries, Elapsed: time.Since(start), Err: err}
		}
		t := time.NewTimer(min(pause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (while retrying: %w)", ctx.Err(), err)
		case <-t.C:
		}
		pause = min(2*pause, maxPause)
	}
}
