package retry

import (
	"context"
	"time"
)

// Sleep pauses for d, or until ctx ends: then it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Poll calls check, pausing every between calls, until it reports done
// or fails (its error is returned), or ctx ends: then ctx's error is
// returned. The caller gives ctx the wait's timeout; check keeps what it
// saw for the caller's message.
func Poll(ctx context.Context, every time.Duration, check func(ctx context.Context) (done bool, err error)) error {
	for {
		done, err := check(ctx)
		if err != nil || done {
			return err
		}
		if err := Sleep(ctx, every); err != nil {
			return err
		}
	}
}
