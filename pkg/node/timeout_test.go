package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

func connect(t *testing.T, ts *simnode.TestServer, timeouts node.Timeouts) *node.Node {
	t.Helper()
	spec := v1alpha1.Node{ObjectMeta: metav1.ObjectMeta{Name: "winworker"}}
	spec.Spec.Credentials = ts.Credentials()
	n, err := node.Connect(context.Background(), spec, node.ConnectOptions{Timeouts: timeouts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// A node whose powershell.exe never answers (the connection alive) must
// not hang swdt: an op called with a context without a deadline ends at
// its own bound, with an error that names the op and the node.
func TestOpWithoutDeadlineTimesOut(t *testing.T) {
	ts := simnode.StartTest(t)
	n := connect(t, ts, node.Timeouts{Query: 300 * time.Millisecond, Hash: 300 * time.Millisecond})
	// The agent arrives before the node stops answering.
	if _, err := n.Facts(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := ts.UpdateFaults(func(f *simnode.Faults) { f.OpLatencyMS = map[string]int{"*": int(time.Hour.Milliseconds())} }); err != nil {
		t.Fatal(err)
	}

	calls := map[string]func() error{
		"node-facts": func() error { _, err := n.Facts(context.Background()); return err },
		"provision-inspect": func() error {
			_, err := n.InspectProvision(context.Background(), []ops.ProvisionTarget{{Service: "kubelet", Destination: `C:\k\kubelet.exe`}})
			return err
		},
	}
	for op, call := range calls {
		start := time.Now()
		err := call()
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("%s: took %s, want about 300ms", op, took)
		}
		var te *node.TimeoutError
		if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: err = %v, want a *node.TimeoutError wrapping the deadline", op, err)
		}
		for _, want := range []string{"op " + op, "node winworker", "300ms", "Get-Process swdt-agent"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", op, err, want)
			}
		}
	}

	// The connection is still usable once the node answers again.
	if err := ts.UpdateFaults(func(f *simnode.Faults) { f.OpLatencyMS = nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Facts(context.Background()); err != nil {
		t.Fatalf("after the timeout: %v", err)
	}
}

// A caller's own deadline wins over the op's default bound.
func TestCallerDeadlineWins(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithFaults(simnode.Faults{OpLatencyMS: map[string]int{"node-facts": 500}}))
	n := connect(t, ts, node.Timeouts{Query: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := n.Facts(ctx); err != nil {
		t.Fatalf("the caller gave 30s, the op took 500ms: %v", err)
	}
}

func TestSwapBudget(t *testing.T) {
	req := ops.ServiceSwapRequest{StopOrder: []string{"a", "b"}, StartOrder: []string{"b", "a"},
		StopTimeoutMs: 1000, StartTimeoutMs: 2000, SettleMs: 500, HealthTimeoutMs: 1500}
	if got, want := node.SwapBudget(req), 4*8*time.Second+time.Minute; got != want {
		t.Errorf("SwapBudget = %s, want %s", got, want)
	}
	if got := node.SwapBudget(ops.ServiceSwapRequest{}); got != time.Minute {
		t.Errorf("SwapBudget of an empty request = %s, want 1m", got)
	}
}

// An op that takes long is reported while it runs, with its bound.
func TestWaitingHeartbeat(t *testing.T) {
	ts := simnode.StartTest(t)
	n := connect(t, ts, node.Timeouts{Query: time.Minute})
	if _, err := n.Facts(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { node.HeartbeatInterval = d }(node.HeartbeatInterval)
	node.HeartbeatInterval = 20 * time.Millisecond
	beats := make(chan string, 100)
	n.Waiting = func(msg string) {
		select {
		case beats <- msg:
		default:
		}
	}
	if err := ts.UpdateFaults(func(f *simnode.Faults) { f.OpLatencyMS = map[string]int{ops.NodeFacts.Name: 300} }); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Facts(context.Background()); err != nil {
		t.Fatal(err)
	}
	n.Waiting = nil
	select {
	case msg := <-beats:
		if !strings.HasPrefix(msg, "waiting for node-facts (") || !strings.HasSuffix(msg, " of 1m0s)") {
			t.Errorf("heartbeat %q", msg)
		}
	default:
		t.Fatal("no heartbeat during an op that took 300 ms")
	}
}
