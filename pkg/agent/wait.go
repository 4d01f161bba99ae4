package agent

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The waits every handler shares: each bounded, each ended by ctx (the
// agent's session).

// poll is retry.Poll under a limit of its own: done is called every
// interval until it reports true (true), fails, or limit passes, when it
// is called a last time (false when it still does not hold); ctx's end
// is an error.
func poll(ctx context.Context, limit, interval time.Duration, done func() (bool, error)) (bool, error) {
	child, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	ok := false
	err := retry.Poll(child, interval, func(context.Context) (bool, error) {
		var err error
		ok, err = done()
		return ok, err
	})
	if err != nil && ctx.Err() == nil && child.Err() != nil {
		return done()
	}
	return ok, err
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
