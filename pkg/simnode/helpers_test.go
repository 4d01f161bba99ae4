package simnode

import (
	"errors"
	"io"
	"sync"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
)

func ioPipe() (*io.PipeReader, *io.PipeWriter) { return io.Pipe() }

// kinder is implemented by simnode's own errors (service and file errors)
// so that a handler may return them unchanged and still produce a useful
// error kind.
type kinder interface{ OpErrorKind() ops.Kind }

// failureOf turns any handler error into the envelope's kind and message.
// Unknown errors are "exception", as an uncaught PowerShell exception.
func failureOf(err error) (kind ops.Kind, message string) {
	var f *OpFailure
	if errors.As(err, &f) {
		return f.Kind, f.Message
	}
	var k kinder
	if errors.As(err, &k) {
		return k.OpErrorKind(), err.Error()
	}
	return ops.KindException, err.Error()
}

// testClock is the machine's clock in a test: it runs with the wall clock
// until the test freezes it, so that a state the test looks at (a service
// still StartPending) does not depend on how fast a loaded machine gets
// round to looking.
type testClock struct {
	mu     sync.Mutex
	frozen *time.Time
	offset time.Duration
}

// useTestClock makes c the machine's clock.
func useTestClock(ts *TestServer) *testClock {
	c := &testClock{}
	ts.Node().SetClock(c.Now)
	return c
}

// Now is the machine's time.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen != nil {
		return *c.frozen
	}
	return time.Now().Add(c.offset)
}

// Freeze stops the clock.
func (c *testClock) Freeze() {
	now := c.Now()
	c.mu.Lock()
	c.frozen = &now
	c.mu.Unlock()
}

// Add moves a frozen clock on by d.
func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen != nil {
		t := c.frozen.Add(d)
		c.frozen = &t
	}
}

// Run lets the clock run on from where it stands.
func (c *testClock) Run() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.frozen != nil {
		c.offset = c.frozen.Sub(time.Now())
		c.frozen = nil
	}
}
