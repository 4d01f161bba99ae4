package node

import (
	"context"
	"fmt"
)

// Caps on what a node may send for one op. A reply is at most a few MiB
// (a 1 MiB chunk of a log, JSON-escaped, is the largest), and the agent
// writes next to nothing on stderr, so they only stop a broken or hostile
// node from growing swdt's memory without end: what goes past a cap is not
// kept, the op is ended, and its error names the cap.
const (
	// MaxReply bounds an op's stdout, where its result line is.
	MaxReply = 32 << 20
	// MaxStderr bounds an op's stderr (a streaming op's result line
	// included; the streamed output of its program is passed on, not
	// kept).
	MaxStderr = 1 << 20
	// maxShownStderr is how much of the end of an op's stderr its error
	// shows.
	maxShownStderr = 8 << 10
)

// OutputLimitError is an op whose node sent more output than swdt keeps.
type OutputLimitError struct {
	// Op is the op's name; Stream "stdout" or "stderr".
	Op, Stream string
	// Limit is the cap in bytes.
	Limit int
}

func (e *OutputLimitError) Error() string {
	return fmt.Sprintf("op %s: the node sent more than %d MiB on %s, swdt's cap for one op: stopped reading and ended the op "+
		"(a broken or hostile node; run 'swdt exec' there to see what prints it)", e.Op, e.Limit>>20, e.Stream)
}

// capBuffer keeps what is written to it up to limit bytes. The write that
// goes past it ends the op (cancel, with an *OutputLimitError as cause);
// that write and any later one are dropped, not refused, so that the
// transport keeps draining the session until it is closed.
type capBuffer struct {
	b      []byte
	limit  int
	over   bool
	cause  *OutputLimitError
	cancel context.CancelCauseFunc
}

func newCapBuffer(op, stream string, limit int, cancel context.CancelCauseFunc) *capBuffer {
	return &capBuffer{limit: limit, cancel: cancel, cause: &OutputLimitError{Op: op, Stream: stream, Limit: limit}}
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if c.over {
		return len(p), nil
	}
	if len(c.b)+len(p) > c.limit {
		c.over = true
		c.cancel(c.cause)
		return len(p), nil
	}
	c.b = append(c.b, p...)
	return len(p), nil
}

// Bytes is what was kept.
func (c *capBuffer) Bytes() []byte { return c.b }

// String is what was kept, as text.
func (c *capBuffer) String() string { return string(c.b) }

// limited returns the *OutputLimitError that ended ctx, if one did.
func limited(ctx context.Context) error {
	if le, ok := context.Cause(ctx).(*OutputLimitError); ok {
		return le
	}
	return nil
}
