package remote

import (
	"context"

	"sigs.k8s.io/swdt/internal/retry"
)

// withRetry runs fn as p says (a try budget, the pause between tries and
// which failures are worth another try), unless ctx has ended already; a
// spent budget is a *RetriesExhaustedError that names op.
func withRetry(ctx context.Context, op string, p retry.Policy, fn func(ctx context.Context, attempt int) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := p.Do(ctx, fn)
	if ex, ok := err.(*retry.ExhaustedError); ok {
		return &RetriesExhaustedError{Op: op, Attempts: ex.Tries, Err: ex.Err}
	}
	return err
}
