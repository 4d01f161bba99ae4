// Package exitcode maps errors to swdt's process exit codes (DESIGN.md §9).
//
// A layer that knows what kind of failure it has (a config error, a partial
// run) wraps the error with WithCode; main asks Code once at the end. It must
// never print or exit by itself.
package exitcode

import (
	"errors"
	"fmt"
)

// Exit codes of the swdt process.
const (
	// OK means everything succeeded.
	OK = 0
	// Failure means the command failed.
	Failure = 1
	// Usage means bad flags, an unknown command or an invalid config file.
	Usage = 2
	// Partial means some provisioners or nodes failed and others succeeded.
	Partial = 3
	// Interrupted means Ctrl-C (or SIGTERM, SIGHUP) ended the run: 128
	// plus SIGINT's number, as shells report it.
	Interrupted = 130
)

// codedError attaches an exit code to an error without changing its message.
type codedError struct {
	code int
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// WithCode returns err annotated with an exit code. The message is
// unchanged and errors.Is/As see through it. WithCode(code, nil) is nil.
func WithCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &codedError{code: code, err: err}
}

// quiet is an exit code with nothing left to report.
type quiet struct{ code int }

func (q quiet) Error() string { return fmt.Sprintf("exit status %d", q.code) }

// Quiet returns an error that only sets the exit code: the command has
// said everything already (swdt exec passes on its program's exit status).
// Quiet(OK) is nil.
func Quiet(code int) error {
	if code == OK {
		return nil
	}
	return WithCode(code, quiet{code})
}

// IsQuiet reports whether err only sets the exit code.
func IsQuiet(err error) bool {
	var q quiet
	return errors.As(err, &q)
}

// Code returns the exit code for err: OK for nil, the code of the outermost
// WithCode in err's chain, or Failure when there is none.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var c *codedError
	if errors.As(err, &c) {
		return c.code
	}
	return Failure
}
