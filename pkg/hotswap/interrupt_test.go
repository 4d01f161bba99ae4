package hotswap_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// stepObserver records the steps and runs onUpload when staging starts.
type stepObserver struct {
	mu       sync.Mutex
	steps    []string
	onUpload func()
}

func (o *stepObserver) Planned(*hotswap.Plan) {}
func (o *stepObserver) Step(msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.steps = append(o.steps, msg)
}
func (o *stepObserver) Upload(hotswap.Item) func(int64) {
	o.mu.Lock()
	fn := o.onUpload
	o.onUpload = nil
	o.mu.Unlock()
	if fn != nil {
		fn()
	}
	return func(int64) {}
}
func (o *stepObserver) said() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return strings.Join(o.steps, "\n")
}

// waitHold waits until an agent on ts reached its AgentHold.
func waitHold(t *testing.T, ts *simnode.TestServer) {
	t.Helper()
	n := ts.Node()
	for deadline := time.Now().Add(30 * time.Second); n.HoldsReached() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the agent never reached its hold")
		}
		if err := n.Sleep(context.Background(), 5*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
}

// kubeletItem is a new kubelet build to swap in.
func kubeletItem(t *testing.T) hotswap.Item {
	return hotswap.Item{Name: "kubelet", Service: "kubelet", Destination: kubelet, Source: sourceFile(t, "kubelet.exe", []byte("MZ kubelet v2\n"))}
}

// leftOnNode says what a run left that it should not have: a changed
// kubelet.exe, a staged file, the swap lock, a service not running.
func leftOnNode(t *testing.T, ts *simnode.TestServer, before []byte) []string {
	t.Helper()
	var left []string
	if got, err := ts.Node().ReadFile(kubelet); err != nil || string(got) != string(before) {
		left = append(left, "kubelet.exe changed")
	}
	names, _ := ts.Node().OS().ReadDir(`C:\k`)
	for _, name := range names {
		if strings.Contains(name, ".swdt-") {
			left = append(left, `C:\k\`+name)
		}
	}
	if _, err := ts.Node().OS().Stat(ops.LockPath); err == nil {
		left = append(left, "the swap lock")
	}
	for _, svc := range []string{"kubelet", "kube-proxy"} {
		if s := ts.State().Services[svc]; s == nil || s.Status != simnode.StatusRunning {
			left = append(left, svc+" not running")
		}
	}
	return left
}

// A Ctrl-C before the swap begins (the inspect, staging) ends the node's
// run saying that nothing was changed there, with exit code 130 and
// without the context's words; and nothing was: no staged file, no lock.
func TestInterruptBeforeTheSwap(t *testing.T) {
	tests := []struct {
		name string
		// hold stops the agent where the Ctrl-C comes (nil: at the
		// first upload): the inspect once it took the lock.
		hold *simnode.AgentHold
		want string
	}{
		{"during the inspect", &simnode.AgentHold{Op: ops.ProvisionInspect.Name, Call: "Rename", Target: "swap.lock.new"},
			"interrupted during the inspect, before the swap: nothing was changed on the node"},
		{"while staging", nil, "interrupted while staging, before the swap: nothing was changed on the node"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithDelays(simnode.Delays{}), simnode.WithFaults(simnode.Faults{HoldAgent: tc.hold}))
			before, err := ts.Node().ReadFile(kubelet)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			obs := &stepObserver{}
			if tc.hold == nil {
				obs.onUpload = cancel
			}
			done := make(chan struct{})
			var (
				report *hotswap.Report
				runErr error
			)
			go func() {
				defer close(done)
				report, runErr = hotswap.Run(ctx, connect(t, ts), []hotswap.Item{kubeletItem(t)}, hotswap.Options{Settle: 0, Observer: obs, Command: "swdt kubernetes"})
			}()
			if tc.hold != nil {
				waitHold(t, ts)
				cancel()
			}
			<-done
			err = runErr
			if err == nil && report != nil && len(report.Results) == 1 {
				err = report.Results[0].Err
			}
			var ie *hotswap.InterruptedError
			if !errors.As(err, &ie) || err.Error() != tc.want || exitcode.Code(err) != exitcode.Interrupted {
				t.Errorf("Run: %v (exit %d)\nwant %q (exit 130)", err, exitcode.Code(err), tc.want)
			}
			if left := leftOnNode(t, ts, before); len(left) > 0 {
				t.Errorf("the interrupted run left on the node: %s", strings.Join(left, "; "))
			}
		})
	}
}

// A second Ctrl-C while the swap op runs on the node gives up at once:
// no repair is tried (which would say it tries again for minutes and
// then that it gave up), the words are the run's own (no op, command
// line or context error), and they say how to repair the node, which
// the next run then does.
func TestSecondInterruptDuringTheSwap(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithDelays(simnode.Delays{}),
		simnode.WithFaults(simnode.Faults{HoldAgent: &simnode.AgentHold{Op: ops.ServiceSwap.Name, Call: "StopService", Target: "kubelet"}}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	abort, giveUp := context.WithCancel(context.Background())
	defer giveUp()
	obs := &stepObserver{}
	opts := hotswap.Options{Settle: 0, StopTimeout: 5 * time.Second, StartTimeout: 5 * time.Second, Observer: obs, Abort: abort, Command: "swdt kubernetes"}
	done := make(chan struct{})
	var (
		report *hotswap.Report
		runErr error
	)
	go func() {
		defer close(done)
		report, runErr = hotswap.Run(ctx, connect(t, ts), []hotswap.Item{kubeletItem(t)}, opts)
	}()
	waitHold(t, ts)
	cancel()
	giveUp()
	<-done
	if runErr != nil || report == nil || len(report.Results) != 1 {
		t.Fatalf("Run: %v; report %+v", runErr, report)
	}
	res := report.Results[0]
	want := "given up at the second Ctrl-C while the swap ran on the node; the swap may be unfinished there (a service stopped, or the new binary not yet verified); " +
		"run swdt kubernetes again: it repairs an unfinished swap before anything else; or check the services (Get-Service kubelet,kube-proxy)"
	if res.Action != hotswap.ActionFailed || res.Error != want {
		t.Errorf("kubelet %s: %s\nwant failed: %s", res.Action, res.Error, want)
	}
	said := obs.said()
	for _, never := range []string{"trying again", "gave up after", "repairing", "context canceled", "cmd.exe", ops.AgentDir, "op " + ops.ServiceSwap.Name} {
		if strings.Contains(said+"\n"+res.Error, never) {
			t.Errorf("the run says %q:\n%s\n%s", never, said, res.Error)
		}
	}
	// As it says: the next run repairs the node first, then swaps.
	next, err := hotswap.Run(context.Background(), connect(t, ts), []hotswap.Item{kubeletItem(t)}, hotswap.Options{Settle: 0, Command: "swdt kubernetes"})
	if err != nil || next.Repair == nil {
		t.Fatalf("the next run: %v; repair %+v", err, next)
	}
	if got, _ := ts.Node().ReadFile(kubelet); string(got) != "MZ kubelet v2\n" {
		t.Errorf("after the next run kubelet.exe holds %q", got)
	}
	for _, svc := range []string{"kubelet", "kube-proxy"} {
		if s := ts.State().Services[svc]; s == nil || s.Status != simnode.StatusRunning {
			t.Errorf("after the next run %s is not running", svc)
		}
	}
}
