package hotswap

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/pkg/ops"
)

// Repair is what a run did about an unfinished swap it found on the node
// (a swap cut short by a killed swdt or a lost node) before planning.
type Repair struct {
	// Owner is the run whose swap was unfinished; Started when it began.
	Owner   ops.LockOwner `json:"owner"`
	Started string        `json:"started"`
	// Items says, per binary, which one the repair left in place.
	Items []ops.SwapRecoverItem `json:"items"`
	// NotStarted lists services that would not start.
	NotStarted []ops.ServiceProblem `json:"notStarted,omitempty"`
	// Ignored says what the journal named that this node file's runs
	// could not have written: left alone.
	Ignored []string `json:"ignored,omitempty"`
}

// Summary says in one line what the repair left.
func (r *Repair) Summary() string {
	var parts []string
	for _, it := range r.Items {
		parts = append(parts, recoveredText(it))
	}
	msg := fmt.Sprintf("repaired the unfinished swap of %s, started %s: %s", ownerText(r.Owner), r.Started, strings.Join(parts, "; "))
	for _, p := range r.NotStarted {
		msg += fmt.Sprintf("; service %s did not start: %s", p.Service, p.Error)
	}
	return msg
}

func ownerText(o ops.LockOwner) string {
	if o.RunID == "" {
		return "a swap outside a locked run"
	}
	return o.String()
}

// recoveredText says which binary a repair left for one item.
func recoveredText(it ops.SwapRecoverItem) string {
	sha := it.SHA256
	if len(sha) > 12 {
		sha = sha[:12]
	}
	var s string
	switch it.Binary {
	case ops.RecoveredNew:
		s = fmt.Sprintf("%s runs the new verified binary (SHA-256 %s)", it.Service, sha)
	case ops.RecoveredOld:
		s = fmt.Sprintf("%s runs the old binary again (SHA-256 %s)", it.Service, sha)
	case ops.RecoveredMissing:
		s = fmt.Sprintf("%s has no binary at %s", it.Service, it.Destination)
	default:
		s = fmt.Sprintf("%s: %s holds a binary that is neither the old nor the new one (SHA-256 %s); left as it is", it.Service, it.Destination, sha)
	}
	if it.Error != "" {
		s += " (" + it.Error + ")"
	}
	return s
}

// repairRetry is the first pause before a repair is tried again (a
// variable for tests); it doubles up to 15 s.
var repairRetry = time.Second

// repairBudget bounds a repair: every service may stop, start, be
// rolled back and start again, plus a minute for the transport.
func repairBudget(opts Options, services int) time.Duration {
	return time.Duration(services+1)*(2*opts.StopTimeout+2*opts.StartTimeout) + opts.Settle + opts.HealthTimeout + time.Minute
}

// recoverSwap runs swap-recover, trying again with a growing pause while
// the node cannot be reached (a transport failure, not the op's own),
// within budget. A first Ctrl-C does not stop it (stopped services must
// come back); opts.Abort does.
func recoverSwap(ctx context.Context, n Node, req ops.SwapRecoverRequest, budget time.Duration, opts Options) (ops.SwapRecoverResponse, error) {
	rctx, cancel := UntilAbort(ctx, opts.Abort)
	defer cancel()
	rctx, cancelBudget := context.WithTimeout(rctx, budget)
	defer cancelBudget()
	delay := repairRetry
	for attempt := 1; ; attempt++ {
		resp, err := n.RecoverSwap(rctx, req)
		if err == nil || opFailed(err, "") {
			return resp, err
		}
		if opts.Abort.Err() != nil {
			return resp, errRepairGivenUp
		}
		if rctx.Err() != nil {
			return resp, fmt.Errorf("%w (gave up after %d tries in %s)", err, attempt, budget.Round(time.Second))
		}
		if attempt == 1 {
			opts.Observer.Step(fmt.Sprintf("the node did not answer the repair (%v); trying again for up to %s", err, budget.Round(time.Second)))
		}
		if retry.Sleep(rctx, delay) != nil {
			if opts.Abort.Err() != nil {
				return resp, errRepairGivenUp
			}
			return resp, fmt.Errorf("%w (gave up after %d tries in %s)", err, attempt, budget.Round(time.Second))
		}
		delay = min(2*delay, 15*time.Second)
	}
}

// errRepairGivenUp is a repair given up at the second Ctrl-C.
var errRepairGivenUp = errors.New("given up at the second Ctrl-C")

// repairFirst repairs the unfinished swap that inspect found, before the
// run plans anything.
func repairFirst(ctx context.Context, n Node, u *ops.UnfinishedSwap, runID string, trusted []ops.TrustedBinary, opts Options) (*Repair, error) {
	j := u.Journal
	opts.Observer.Step(fmt.Sprintf("the node has an unfinished swap of %s, started %s; repairing it first", ownerText(j.Owner), j.Started))
	services := len(j.Request.StopOrder) + len(j.Request.StartOrder)
	resp, err := recoverSwap(ctx, n, ops.SwapRecoverRequest{RunID: runID, Trusted: trusted}, repairBudget(opts, services), opts)
	if err != nil {
		return nil, fmt.Errorf("repair the unfinished swap of %s: %w; nothing else was done", ownerText(j.Owner), err)
	}
	for _, why := range resp.Ignored {
		opts.Observer.Step(why)
	}
	r := &Repair{Owner: j.Owner, Started: j.Started, Items: resp.Items, NotStarted: resp.NotStarted, Ignored: resp.Ignored}
	if resp.Journal != nil {
		r.Owner, r.Started = resp.Journal.Owner, resp.Journal.Started
	}
	opts.Observer.Step(r.Summary())
	return r, nil
}

// trustedBinaries are the node file's binaries, as a repair may act on
// them: destination, service and health checks.
func trustedBinaries(items []Item) []ops.TrustedBinary {
	out := make([]ops.TrustedBinary, 0, len(items))
	for _, it := range items {
		out = append(out, ops.TrustedBinary{Service: it.Service, Destination: it.Destination, HealthChecks: it.HealthChecks})
	}
	return out
}
