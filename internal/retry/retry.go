// Package retry calls a function again while it fails in a way that
// passes, within a budget of tries or time: for errors that a moment
// cures (a file a virus scanner has open, a connection to make again),
// never as a substitute for waiting on an event. It also has the one
// poll loop and the one pause that honour a context (poll.go).
package retry

import (
	"context"
	"errors"
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

// Policy says how often a function is tried and which failures are worth
// another try.
type Policy struct {
	// Tries is the try budget (0: no limit); Budget the time budget from
	// the first try (0: no limit). One of them must be set.
	Tries  int
	Budget time.Duration
	// Pause is the pause before the first retry; each later one is twice
	// the last, up to MaxPause (0: every pause is Pause).
	Pause, MaxPause time.Duration
	// ShouldRetry reports whether a failure is worth another try (nil:
	// none is).
	ShouldRetry func(error) bool
}

// Do calls fn, with its try number from 1, until it succeeds or fails in
// a way ShouldRetry refuses (that error is returned as is), or the budget
// is spent: then the last failure is returned in an *ExhaustedError.
// With a time budget the last try is made at its end, not before it.
// When ctx ends first, ctx's error is returned wrapped with the last
// failure (the failure alone when it is ctx's error already).
func (p Policy) Do(ctx context.Context, fn func(ctx context.Context, try int) error) error {
	start := time.Now()
	pause := p.Pause
	for try := 1; ; try++ {
		err := fn(ctx, try)
		if err == nil || p.ShouldRetry == nil || !p.ShouldRetry(err) {
			return err
		}
		if ctx.Err() != nil {
			return ended(ctx, err)
		}
		left := p.Budget - time.Since(start)
		if (p.Tries > 0 && try >= p.Tries) || (p.Budget > 0 && left <= 0) {
			return &ExhaustedError{Tries: try, Elapsed: time.Since(start), Err: err}
		}
		wait := pause
		if p.Budget > 0 {
			wait = min(wait, left)
		}
		if Sleep(ctx, wait) != nil {
			return ended(ctx, err)
		}
		if p.MaxPause > pause {
			pause = min(2*pause, p.MaxPause)
		}
	}
}

// ended is the error of a retry that ctx ended after the failure err.
func ended(ctx context.Context, err error) error {
	if errors.Is(err, ctx.Err()) {
		return err
	}
	return fmt.Errorf("%w (while retrying: %w)", ctx.Err(), err)
}

// First and longest pause between the tries of Do.
const (
	firstPause = 10 * time.Millisecond
	maxPause   = 200 * time.Millisecond
)

// Do calls fn until it succeeds or fails in a way shouldRetry refuses, or
// budget has passed since the first try, pausing 10ms at first and up to
// 200ms: Policy.Do with a time budget.
func Do(ctx context.Context, budget time.Duration, shouldRetry func(error) bool, fn func() error) error {
	p := Policy{Budget: budget, Pause: firstPause, MaxPause: maxPause, ShouldRetry: shouldRetry}
	return p.Do(ctx, func(context.Context, int) error { return fn() })
}
