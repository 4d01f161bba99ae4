package agent

import (
	"testing"
	"time"
)

// WinsLimits are the wins handlers' waits, for tests to shorten.
type WinsLimits struct {
	Call, Register, Stop, Exit, Settle time.Duration
}

// ShortenWinsLimits sets the wins handlers' waits for the rest of the test
// and puts the defaults back when it ends. A test that calls it must not
// run in parallel with another wins test.
func ShortenWinsLimits(t testing.TB, l WinsLimits) {
	t.Helper()
	old := winsLimits
	winsLimits = winsLimitSet{call: l.Call, register: l.Register, stop: l.Stop, exit: l.Exit, settle: l.Settle, poll: 10 * time.Millisecond}
	t.Cleanup(func() { winsLimits = old })
}
