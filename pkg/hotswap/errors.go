package hotswap

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/exitcode"
)

// ItemError is why an item failed or was rolled back (Result.Err): what
// went wrong, what that left on the node, and what the user can do.
type ItemError struct {
	// Err is what went wrong: an op's or an upload's error, or a
	// *SwapFailure.
	Err error
	// Left says what the failure left on the node, in order ("no service
	// was touched", "repaired: kubelet runs the old binary again").
	Left []string
	// Advice is what the user can do about it ("" when nothing).
	Advice string
}

func (e *ItemError) Error() string {
	parts := append([]string{e.Err.Error()}, e.Left...)
	if e.Advice != "" {
		parts = append(parts, e.Advice)
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns what went wrong.
func (e *ItemError) Unwrap() error { return e.Err }

// SwapFailure is an item the swap op failed, rolled back or could not
// start the service of, in the op's own words.
type SwapFailure struct {
	// Service is the item's service.
	Service string
	// Message is the op's explanation.
	Message string
}

func (e *SwapFailure) Error() string { return e.Message }

// MissingPipe reports whether the failure is a named-pipe health check
// that did not find the pipe \\.\pipe\<name>.
func (e *SwapFailure) MissingPipe(name string) bool {
	return strings.Contains(e.Message, `\\.\pipe\`+name)
}

// untouched is what a failure before the swap leaves.
const untouched = "no service was touched"

// InterruptedError is a run on one node that its context's end (Ctrl-C)
// cut short before its swap began: nothing was changed on the node, or
// nothing after the repair of an unfinished swap, which a first Ctrl-C
// lets finish. Its message says so instead of the context's error,
// which it wraps.
type InterruptedError struct {
	// During says when it was cut short: "while connecting", "during
	// the inspect", "while staging".
	During string
	// Repaired is set when the run repaired an unfinished swap first.
	Repaired bool
	// Err is the context's error, or what it ended.
	Err error
}

func (e *InterruptedError) Error() string {
	if e.Repaired {
		return fmt.Sprintf("interrupted %s, after repairing the unfinished swap: nothing else was changed on the node", e.During)
	}
	return fmt.Sprintf("interrupted %s, before the swap: nothing was changed on the node", e.During)
}

// Unwrap returns the context's error.
func (e *InterruptedError) Unwrap() error { return e.Err }

// Interrupted is err, which ctx's end caused (during says when), as an
// *InterruptedError with exit code 130; an error ctx did not cause, as
// it is.
func Interrupted(ctx context.Context, during string, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	return exitcode.WithCode(exitcode.Interrupted, &InterruptedError{During: during, Err: err})
}

// errGivenUp is a swap given up while it ran on the node (opts.Abort: a
// second Ctrl-C).
var errGivenUp = errors.New("given up at the second Ctrl-C while the swap ran on the node")

// setErr makes err the result's error, typed and as text.
func (res *Result) setErr(err error) { res.Err, res.Error = err, err.Error() }

// left adds to the result's error what happened next on the node.
func (res *Result) left(what string) {
	var ie *ItemError
	if !errors.As(res.Err, &ie) {
		ie = &ItemError{Err: res.Err}
	}
	ie.Left = append(ie.Left, what)
	res.setErr(ie)
}
