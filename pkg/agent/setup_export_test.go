package agent

import (
	"testing"
	"time"
)

// SetupLimits are the setup handlers' time limits, for tests to shorten.
type SetupLimits struct {
	ChocoSetup, ChocoPackage, Query time.Duration
}

// ShortenSetupLimits sets the setup handlers' time limits for the rest of
// the test (zero fields keep theirs) and puts the defaults back when it
// ends. A test that calls it must not run in parallel with another setup
// test.
func ShortenSetupLimits(t testing.TB, l SetupLimits) {
	t.Helper()
	old := setupLimits
	for _, f := range []struct {
		to   *time.Duration
		from time.Duration
	}{{&setupLimits.chocoSetup, l.ChocoSetup}, {&setupLimits.chocoPackage, l.ChocoPackage}, {&setupLimits.query, l.Query}} {
		if f.from > 0 {
			*f.to = f.from
		}
	}
	t.Cleanup(func() { setupLimits = old })
}

// ShortenHyperVLimit sets the Hyper-V scripts' time limit for the rest of
// the test and puts the default back when it ends. A test that calls it
// must not run in parallel with another Hyper-V test.
func ShortenHyperVLimit(t testing.TB, d time.Duration) {
	t.Helper()
	old := hypervOpLimit
	hypervOpLimit = d
	t.Cleanup(func() { hypervOpLimit = old })
}
