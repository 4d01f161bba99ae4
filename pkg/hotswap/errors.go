package hotswap

import (
	"errors"
	"strings"
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

// errInterrupted is a run interrupted before its swap.
var errInterrupted = errors.New("interrupted before the swap")

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
