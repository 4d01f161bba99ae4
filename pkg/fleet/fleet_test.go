package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

func nodes(names ...string) []v1alpha1.Node {
	out := make([]v1alpha1.Node, len(names))
	for i, n := range names {
		out[i].Name = n
	}
	return out
}

// waitOrFail waits for ch; a minute without it means the nodes did not
// run at once (that bound is for a hang, not a measure of speed).
func waitOrFail(t *testing.T, ch <-chan struct{}, what string) {
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Errorf("%s: the nodes did not run in parallel", what)
	}
}

func TestRunKeepsOrderAndRunsConcurrently(t *testing.T) {
	ns := nodes("a", "b", "c", "d")
	// Every node waits until all have started (they run at once), then
	// each waits for the next to finish: the last node finishes first, so
	// the order of the results must not come from completion.
	var started atomic.Int32
	all := make(chan struct{})
	finished := map[string]chan struct{}{}
	for _, n := range ns {
		finished[n.Name] = make(chan struct{})
	}
	res := Run(context.Background(), ns, 0, func(_ context.Context, n *v1alpha1.Node) (string, error) {
		defer close(finished[n.Name])
		if started.Add(1) == int32(len(ns)) {
			close(all)
		}
		waitOrFail(t, all, "start")
		if next, ok := finished[string(rune(n.Name[0]+1))]; ok {
			waitOrFail(t, next, "finish of "+string(rune(n.Name[0]+1)))
		}
		return strings.ToUpper(n.Name), nil
	})
	for i, r := range res {
		if r.Node != ns[i].Name || r.Value != strings.ToUpper(ns[i].Name) || r.Err != nil {
			t.Errorf("result %d = %+v", i, r)
		}
	}
	if err := Err(res, nil); err != nil {
		t.Errorf("Err = %v", err)
	}
}

func TestRunLimit(t *testing.T) {
	var running, peak, started atomic.Int32
	two := make(chan struct{})
	Run(context.Background(), nodes("a", "b", "c", "d", "e"), 2, func(context.Context, *v1alpha1.Node) (int, error) {
		raise(&peak, running.Add(1))
		defer running.Add(-1)
		// The first two wait for each other: the limit is reached.
		switch started.Add(1) {
		case 1:
			waitOrFail(t, two, "limit 2")
		case 2:
			close(two)
		}
		return 0, nil
	})
	if p := peak.Load(); p != 2 {
		t.Errorf("peak concurrency %d, limit 2", p)
	}
}

func TestErr(t *testing.T) {
	boom := errors.New("boom")
	fn := func(fail ...string) func(context.Context, *v1alpha1.Node) (int, error) {
		return func(_ context.Context, n *v1alpha1.Node) (int, error) {
			for _, f := range fail {
				if n.Name == f {
					return 0, fmt.Errorf("stage kubelet: %w", boom)
				}
			}
			return 1, nil
		}
	}
	tests := []struct {
		name string
		fail []string
		code int
		msg  string
	}{
		{"all ok", nil, exitcode.OK, ""},
		{"partial", []string{"b"}, exitcode.Partial, "node b: stage kubelet: boom"},
		{"all failed", []string{"a", "b"}, exitcode.Failure, "node a: stage kubelet: boom\nnode b: stage kubelet: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Err(Run(context.Background(), nodes("a", "b"), 0, fn(tt.fail...)), nil)
			if exitcode.Code(err) != tt.code {
				t.Errorf("code = %d, want %d (%v)", exitcode.Code(err), tt.code, err)
			}
			if err != nil && (err.Error() != tt.msg || !errors.Is(err, boom)) {
				t.Errorf("err = %q, want %q wrapping boom", err, tt.msg)
			}
			var ne *NodeError
			if err != nil && !errors.As(err, &ne) {
				t.Errorf("err %v has no *NodeError", err)
			}
		})
	}
}

// Failures on reached nodes make a run partial, listed with the nodes
// that could not be reached; failures alone on every node too (the nodes
// were reached).
func TestErrWithFailures(t *testing.T) {
	res := []Result[int]{{Node: "a", Err: errors.New("unreachable")}, {Node: "b", Value: 2}, {Node: "c", Value: 0}}
	failures := func(v int) []error {
		var errs []error
		for i := range v {
			errs = append(errs, fmt.Errorf("step %d failed", i))
		}
		return errs
	}
	err := Err(res, failures)
	if exitcode.Code(err) != exitcode.Partial {
		t.Errorf("code = %d, want partial", exitcode.Code(err))
	}
	if want := "node a: unreachable\nnode b: step 0 failed\nnode b: step 1 failed"; err == nil || err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if err := Err(res[1:], failures); exitcode.Code(err) != exitcode.Partial {
		t.Errorf("failures on reached nodes only: code %d, want partial", exitcode.Code(err))
	}
	if err := Err(res[2:], failures); err != nil {
		t.Errorf("nothing failed: %v", err)
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	started := make(chan struct{})
	var calls atomic.Int32
	go func() {
		<-started
		cancel()
		close(release)
	}()
	res := Run(ctx, nodes("a", "b", "c"), 1, func(ctx context.Context, n *v1alpha1.Node) (int, error) {
		if calls.Add(1) == 1 {
			close(started)
			<-release
		}
		return 0, ctx.Err()
	})
	if calls.Load() != 1 {
		t.Errorf("fn ran %d times after cancel, want 1", calls.Load())
	}
	for _, r := range res[1:] {
		if !errors.Is(r.Err, context.Canceled) || r.Err.Error() != "interrupted before it started: nothing was changed on the node" || exitcode.Code(r.Err) != exitcode.Interrupted {
			t.Errorf("node %s: err = %v, want it interrupted before it started, nothing changed", r.Node, r.Err)
		}
	}
}

func TestRunNoNodes(t *testing.T) {
	if res := Run(context.Background(), nil, 0, func(context.Context, *v1alpha1.Node) (int, error) { return 0, nil }); len(res) != 0 {
		t.Errorf("results = %v", res)
	}
}

// raise sets peak to cur when cur is higher.
func raise(peak *atomic.Int32, cur int32) {
	for {
		p := peak.Load()
		if cur <= p || peak.CompareAndSwap(p, cur) {
			return
		}
	}
}
