package agent

import (
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// What a service-swap op (swap, undo, restart) or a repair of one knows
// while it runs: a record per item and per service. Windows compares
// service names case-insensitively; svcKey normalises a name once, and
// every lookup of a service's record goes through it.

// svcKey is a service name as Windows compares it.
type svcKey string

// keyOf is the key of a service name.
func keyOf(name string) svcKey { return svcKey(strings.ToLower(name)) }

// serviceRecord is what the op knows of one service.
type serviceRecord struct {
	// items are the indices of the items whose binary the service runs.
	items []int
	// stopped is true once the op stopped the service; stoppedAt is
	// when that began (since the op started).
	stopped   bool
	stoppedAt time.Duration
	// running is true when the service last reached Running after the
	// op started it; runningAt is when.
	running   bool
	runningAt time.Duration
	// stopping is true while the op stops it, against a dependency loop.
	stopping bool
	// failure is why the service is not running as it should since the
	// op last started it (nil: it is).
	failure *serviceFailure
	// recoveryOff is true once its failure actions were switched off (or
	// found to need no switching off); recoveryUnknown when the system
	// could not report them.
	recoveryOff, recoveryUnknown bool
	// killed is true once the op killed its process; alsoStopped when
	// the op stopped it as a dependent StopOrder left out.
	killed, alsoStopped bool
}

// itemRecord is what the op knows of one item.
type itemRecord struct {
	// result is the item's result as it stands.
	result ops.SwapItemResult
	// verified is the staged file as it was when its digest was
	// checked (nil: not checked): a change since means hashing it again.
	verified *winos.FileInfo
	// decoded is true when this op decoded the staged file (and so
	// verified it).
	decoded bool
	// rollback is true when the item's old binary is put back.
	rollback bool
}

// serviceFailure is why a service the op started is not running as it
// should: it did not reach Running, did not stay Running through the
// settle period, or failed its health checks.
type serviceFailure struct {
	// health is true when the service runs and its health checks fail.
	health bool
	// cause says what went wrong.
	cause string
}

// String is the failure as reports give it.
func (f *serviceFailure) String() string {
	if f.health {
		return "health check failed: " + f.cause
	}
	return f.cause
}

// service is the record of the service name, made on first use.
func (s *swapRun) service(name string) *serviceRecord {
	k := keyOf(name)
	r, ok := s.services[k]
	if !ok {
		r = &serviceRecord{}
		s.services[k] = r
	}
	return r
}

// failure is why the service name is not running as it should, nil when
// it is (or the op did not start it).
func (s *swapRun) failure(name string) *serviceFailure {
	if r, ok := s.services[keyOf(name)]; ok {
		return r.failure
	}
	return nil
}

// results are the items' results as they stand.
func (s *swapRun) results() []ops.SwapItemResult {
	out := make([]ops.SwapItemResult, len(s.items))
	for i := range s.items {
		out[i] = s.items[i].result
	}
	return out
}

// nothingStopped ends the message of a failure before the op stopped any
// service: the node's services run as they did.
const nothingStopped = "nothing was stopped"

// beforeStopError is a failure of the op before it stopped any service.
// Its message is the cause's followed by "; nothing was stopped" or, with
// a step, "step (nothing was stopped): cause". An agent.Failure it wraps
// keeps its kind and message on the wire.
type beforeStopError struct {
	// step is what the op was doing ("": the cause says it).
	step  string
	cause error
}

func (e *beforeStopError) Error() string {
	if e.step == "" {
		return e.cause.Error() + "; " + nothingStopped
	}
	return e.step + " (" + nothingStopped + "): " + e.cause.Error()
}

func (e *beforeStopError) Unwrap() error { return e.cause }

// beforeStop is err, from before the op stopped any service.
func beforeStop(err error) error { return &beforeStopError{cause: err} }

// failBeforeStop is Fail for a failure before the op stopped any service.
func failBeforeStop(kind ops.Kind, format string, args ...any) error {
	return Fail(kind, format+"; "+nothingStopped, args...)
}
