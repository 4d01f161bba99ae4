package remote

import (
	"context"
	"time"
)

// retryPolicy says how often a call is tried and which failures are worth
// another try.
type retryPolicy struct {
	// Attempts is the total try budget (>= 1).
	Attempts int
	// Delay is the pause before each retry.
	Delay time.Duration
	// ShouldRetry reports whether err is worth another attempt.
	ShouldRetry func(err error) bool
}

// retry runs fn until it succeeds, fails with an error ShouldRetry rejects,
// the budget runs out (a *RetriesExhaustedError), or ctx ends.
func retry(ctx context.Context, op string, p retryPolicy, fn func(ctx context.Context, attempt int) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		if cerr := ctx.Err(); cerr != nil {
			if err != nil {
				return err
			}
			return cerr
		}
		err = fn(ctx, attempt)
		if err == nil || ctx.Err() != nil || p.ShouldRetry == nil || !p.ShouldRetry(err) {
			return err
		}
		if attempt >= p.Attempts {
			return &RetriesExhaustedError{Op: op, Attempts: attempt, Err: err}
		}
		if p.Delay > 0 {
			t := time.NewTimer(p.Delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
		}
	}
}
