package agent

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/swdt/pkg/winos"
)

// The waits every handler shares: each bounded, each ended by ctx (the
// agent's session).

// poll calls done every interval until it reports true (true), fails,
// limit passes (false) or ctx ends (ctx's error).
func poll(ctx context.Context, limit, interval time.Duration, done func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(limit)
	for {
		ok, err := done()
		if ok || err != nil {
			return ok, err
		}
		if !time.Now().Before(deadline) {
			return false, nil
		}
		if err := sleep(ctx, min(interval, time.Until(deadline))); err != nil {
			return false, err
		}
	}
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
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

// bounded runs a program or script under a time limit of its own.
// expired is true when that limit, not ctx, ended it; err is then nil.
func bounded(ctx context.Context, limit time.Duration, run func(context.Context) (winos.Result, error)) (res winos.Result, expired bool, err error) {
	child, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	res, err = run(child)
	if err != nil && ctx.Err() == nil && errors.Is(child.Err(), context.DeadlineExceeded) {
		return res, true, nil
	}
	return res, false, err
}

// runBounded is bounded for a program.
func runBounded(ctx context.Context, w winos.OS, limit time.Duration, cmd winos.Command) (winos.Result, bool, error) {
	return bounded(ctx, limit, func(ctx context.Context) (winos.Result, error) { return w.Run(ctx, cmd) })
}

// scriptBounded is bounded for a fixed script.
func scriptBounded(ctx context.Context, w winos.OS, limit time.Duration, s winos.Script, input []byte) (winos.Result, bool, error) {
	return bounded(ctx, limit, func(ctx context.Context) (winos.Result, error) { return w.RunScript(ctx, s, input) })
}
