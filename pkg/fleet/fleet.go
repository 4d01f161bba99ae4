// Package fleet runs one function per node concurrently and reports every
// node's outcome in the order the nodes appear in the config file, so that
// "several nodes in parallel" is one call for every workflow.
//
// It must never print: callers turn Results into output through pkg/ui.
package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/node"
)

// Connector dials one node of the node file, on its hostname or at the
// address its VM's hypervisor reports. warn receives what the user must
// see about the connection (an insecure host key policy, a password
// variable that is unset). Workflows take one, so that they never see
// SSH, credentials or the terminal.
type Connector func(ctx context.Context, spec *v1alpha1.Node, warn func(msg string)) (*node.Node, error)

// Result is one node's outcome.
type Result[T any] struct {
	// Node is the node's metadata.name.
	Node string
	// Value is what fn returned; meaningful when Err is nil (and may be
	// partly filled when it is not).
	Value T
	// Err is fn's error, or the context's error when the node never started.
	Err error
}

// Run calls fn for every node, at most limit at a time (limit <= 0: all at
// once), and waits for all of them. Results are in node order. A failing
// node does not stop the others; cancelling ctx stops nodes that have not
// started yet, and fn is expected to honour ctx.
func Run[T any](ctx context.Context, nodes []v1alpha1.Node, limit int,
	fn func(ctx context.Context, node *v1alpha1.Node) (T, error)) []Result[T] {
	if limit <= 0 || limit > len(nodes) {
		limit = len(nodes)
	}
	results := make([]Result[T], len(nodes))
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range nodes {
		n := &nodes[i]
		results[i].Node = n.Name
		if !acquire(ctx, sem) {
			results[i].Err = notStarted(ctx.Err())
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			results[i].Value, results[i].Err = fn(ctx, n)
		})
	}
	wg.Wait()
	return results
}

// NotStartedError is a node that Run never started: the context ended
// first (Ctrl-C), so nothing was done on it.
type NotStartedError struct {
	// Err is the context's error.
	Err error
}

func (e *NotStartedError) Error() string {
	if errors.Is(e.Err, context.Canceled) {
		return "interrupted before it started: nothing was changed on the node"
	}
	return fmt.Sprintf("not started (%v): nothing was changed on the node", e.Err)
}

// Unwrap returns the context's error.
func (e *NotStartedError) Unwrap() error { return e.Err }

// notStarted is the *NotStartedError of err, with exit code 130 when it
// was cancelled (Ctrl-C).
func notStarted(err error) error {
	if errors.Is(err, context.Canceled) {
		return exitcode.WithCode(exitcode.Interrupted, &NotStartedError{Err: err})
	}
	return &NotStartedError{Err: err}
}

// acquire takes a slot, or reports false once ctx is done (checked first:
// select picks at random when a slot is free as well).
func acquire(ctx context.Context, sem chan struct{}) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case sem <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// Err is the outcome of a run over nodes as one error, the same for every
// command (DESIGN.md §9): nil when everything worked; every node's error,
// each naming its node, when no node could be reached (exit 1); otherwise
// the nodes that failed and what failed on the others, with
// exitcode.Partial. failures (nil: none) lists what failed on one node
// whose fn returned no error, for example a provisioner rolled back.
func Err[T any](results []Result[T], failures func(T) []error) error {
	var errs []error
	reached := 0
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, &NodeError{Node: r.Node, Err: r.Err})
			continue
		}
		reached++
		if failures == nil {
			continue
		}
		for _, err := range failures(r.Value) {
			errs = append(errs, &NodeError{Node: r.Node, Err: err})
		}
	}
	switch {
	case len(errs) == 0:
		return nil
	case reached == 0:
		return errors.Join(errs...)
	default:
		return exitcode.WithCode(exitcode.Partial, errors.Join(errs...))
	}
}

// NodeError is the failure of one node.
type NodeError struct {
	// Node is the node's metadata.name.
	Node string
	// Err is what went wrong.
	Err error
}

// Error prefixes the failure with the node's name.
func (e *NodeError) Error() string { return fmt.Sprintf("node %s: %v", e.Node, e.Err) }

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }
