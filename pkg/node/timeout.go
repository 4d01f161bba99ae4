package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
)

// Timeouts bound how long an op may take on the node when the caller's
// context has no deadline of its own. Without them a node whose
// swdt-agent hangs (the connection alive, the op never answering)
// would hang swdt forever. Zero fields take the Default* values.
type Timeouts struct {
	// Query bounds ops that read or change a little state: facts, RDP,
	// authorized keys, wins' config, registration, orphans, removals.
	Query time.Duration
	// Hash bounds ops that read whole binaries on the node (inspect,
	// hash).
	Hash time.Duration
	// Service bounds ops that stop and start services without timings
	// of their own: swap repair, wins verification and uninstall.
	Service time.Duration
	// Install bounds Chocolatey's install and package installs, which
	// download from the internet.
	Install time.Duration
}

// Default op timeouts. Hashing reads a binary at disk speed: 10 minutes
// leave room for multi-GB files on a slow disk. A service swap is bounded
// by SwapBudget of its request instead.
const (
	DefaultQueryTimeout   = 2 * time.Minute
	DefaultHashTimeout    = 10 * time.Minute
	DefaultServiceTimeout = 10 * time.Minute
	DefaultInstallTimeout = time.Hour
)

func (t Timeouts) query() time.Duration   { return orDefault(t.Query, DefaultQueryTimeout) }
func (t Timeouts) hash() time.Duration    { return orDefault(t.Hash, DefaultHashTimeout) }
func (t Timeouts) service() time.Duration { return orDefault(t.Service, DefaultServiceTimeout) }
func (t Timeouts) install() time.Duration { return orDefault(t.Install, DefaultInstallTimeout) }

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// SwapBudget is how long a service-swap op may take as a whole: every
// service may use its full stop timeout, its kill, its start timeout, a
// restart after a rollback, the settle period and its health checks, plus
// a minute for the transport.
func SwapBudget(req ops.ServiceSwapRequest) time.Duration {
	services := max(len(req.StopOrder)+len(req.StartOrder), 1)
	ms := 2*req.StopTimeoutMs + 2*req.StartTimeoutMs + req.SettleMs + req.HealthTimeoutMs
	return time.Duration(services)*time.Duration(ms)*time.Millisecond + time.Minute
}

// TimeoutError is an op that did not answer within its bound. It wraps
// context.DeadlineExceeded.
type TimeoutError struct {
	// Node is the node's name; Op the op's.
	Node, Op string
	// After is the bound the op was given.
	After time.Duration
	// Err is the transport's error.
	Err error
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("op %s on node %s did not answer within %s: the node's swdt-agent may hang; "+
		"check it over ssh or RDP (Get-Process swdt-agent*) and run again", e.Op, e.Node, e.After.Round(time.Millisecond))
}

// Unwrap returns the transport's error.
func (e *TimeoutError) Unwrap() error { return e.Err }

// call runs op with a bound: the caller's deadline when ctx has one (it
// knows better, e.g. a swap's budget), else bound. An op cut off by it is
// a *TimeoutError.
//
// Nothing runs at the agent's path before this process has verified the
// file there by content (deliver): the first op of a run delivers or
// verifies the agent, within a bound of its own so that a first contact
// does not eat a short op's budget.
func call[Req, Resp any](ctx context.Context, n *Node, op ops.Op[Req, Resp], req Req, bound time.Duration) (Resp, error) {
	return callWith(ctx, n, op, req, nil, bound)
}

// callWith is call with attachments after the request (ops.TakesAttachments;
// nil: none).
func callWith[Req, Resp any](ctx context.Context, n *Node, op ops.Op[Req, Resp], req Req, attachments io.Reader, bound time.Duration) (Resp, error) {
	var resp Resp
	path := n.agent()
	if path == "" {
		p, _, err := n.deliver(ctx, time.Now())
		if err != nil {
			return resp, err
		}
		path = p
	}
	return attempt(ctx, n, path, op, req, attachments, bound)
}

// attempt runs op once with the agent at path, within bound.
func attempt[Req, Resp any](ctx context.Context, n *Node, path string, op ops.Op[Req, Resp], req Req, attachments io.Reader, bound time.Duration) (Resp, error) {
	if dl, ok := ctx.Deadline(); ok {
		bound = time.Until(dl)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	defer n.heartbeat(op.Name, bound)()
	resp, err := run(ctx, n, path, op, req, attachments)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return resp, &TimeoutError{Node: n.Name, Op: op.Name, After: bound, Err: err}
	}
	return resp, err
}

// HeartbeatInterval is how often Node.Waiting hears of an op that is
// still running.
var HeartbeatInterval = 10 * time.Second

// heartbeat tells n.Waiting every HeartbeatInterval that op still runs,
// until the returned stop is called.
func (n *Node) heartbeat(op string, bound time.Duration) (stop func()) {
	waiting, every := n.Waiting, HeartbeatInterval
	if waiting == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				waiting(fmt.Sprintf("waiting for %s (%s of %s)", op, now.Sub(start).Round(time.Second), bound.Round(time.Second)))
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
	}
}
