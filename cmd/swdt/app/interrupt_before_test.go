package app

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// A Ctrl-C while swdt kubernetes inspects the node (before any swap)
// ends with exit 130 and says that nothing was changed on that node,
// not "context canceled".
func TestInterruptDuringTheInspect(t *testing.T) {
	fx := newKubeFixture(t, simnode.WithFaults(simnode.Faults{HoldAgent: &simnode.AgentHold{Op: ops.ProvisionInspect.Name, Call: "Rename", Target: "swap.lock.new"}}))
	args := []string{"kubernetes", "-c", fx.config, "--cache-dir", fx.cache, "--no-color", "--only", "kubelet"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := make(fakeSignals, 1)
	errOut := &lockedBuffer{}
	done := make(chan int, 1)
	go func() {
		var out lockedBuffer
		done <- runEnv(ctx, &env{streams: Streams{In: strings.NewReader(""), Out: &out, ErrOut: errOut}, notify: fake.notify}, args)
	}()
	var sigs chan<- os.Signal
	select {
	case sigs = <-fake:
	case <-time.After(15 * time.Second):
		t.Fatalf("swdt kubernetes did not watch for interrupts:\n%s", errOut.String())
	}
	if !waitFor(t, func() bool { return fx.ts.Node().HoldsReached() == 1 }) {
		t.Fatalf("the inspect never reached its hold:\n%s", errOut.String())
	}
	cancel() // what main's signal.NotifyContext does on the first Ctrl-C
	sigs <- os.Interrupt
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("did not end after the interrupt:\n%s", errOut.String())
	}
	got := errOut.String()
	if code != exitcode.Interrupted || !strings.Contains(got, "node sim: interrupted during the inspect, before the swap: nothing was changed on the node") ||
		strings.Contains(got, "context canceled") {
		t.Errorf("exit %d, want %d saying nothing was changed on node sim (and not context canceled):\n%s", code, exitcode.Interrupted, got)
	}
	if strings.Contains(got, "a swap in progress finishes first") || !strings.Contains(got, "no swap was in progress") {
		t.Errorf("the first Ctrl-C during the inspect spoke of a swap in progress:\n%s", got)
	}
	if fx.tryContent(kubeletExe) == "MZ kubelet v2\n" {
		t.Error("the kubelet was swapped although the run was interrupted before the swap")
	}
}
