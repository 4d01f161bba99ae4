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

// fakeSignals stands in for signal.Notify: the test sends the interrupts.
type fakeSignals chan chan<- os.Signal

func (f fakeSignals) notify(c chan<- os.Signal) func() {
	f <- c
	return func() {}
}

// interruptCase starts one swapping command against a simnode whose
// service-swap op takes swapLatency, and says how to check the node after.
type interruptCase struct {
	name string
	// start returns the command line and a check that the swap finished.
	start func(t *testing.T, swapLatency time.Duration) (args []string, swapped func() bool)
}

var interruptCases = []interruptCase{
	{name: "kubernetes", start: func(t *testing.T, lat time.Duration) ([]string, func() bool) {
		fx := newKubeFixture(t, simnode.WithFaults(simnode.Faults{OpLatencyMS: map[string]int{ops.ServiceSwap.Name: int(lat.Milliseconds())}}))
		args := []string{"kubernetes", "-c", fx.config, "--cache-dir", fx.cache, "--no-color", "--only", "kubelet",
			"--stop-timeout", "300ms", "--start-timeout", "3s", "--settle", "100ms", "--health-timeout", "500ms"}
		return args, func() bool {
			svc := fx.ts.State().Services["kubelet"]
			return fx.tryContent(kubeletExe) == "MZ kubelet v2\n" && svc != nil && svc.Status == simnode.StatusRunning
		}
	}},
	{name: "wins", start: func(t *testing.T, lat time.Duration) ([]string, func() bool) {
		ts := simnode.StartTest(t, simnode.WithFaults(simnode.Faults{OpLatencyMS: map[string]int{ops.ServiceSwap.Name: int(lat.Milliseconds())}}))
		file := winsNodeFile(t, ts, "", "MZ rancher/wins v0.15.1\n")
		args := []string{"wins", "-c", file, "--no-color", "--settle", "100ms"}
		return args, func() bool {
			b, _ := ts.Node().ReadFile(`C:\etc\rancher\wins\wins.exe`)
			return string(b) == "MZ rancher/wins v0.15.1\n"
		}
	}},
}

// startInterruptible runs args in the background with fake signals and
// waits until the swap op is under way.
func startInterruptible(t *testing.T, ctx context.Context, args []string) (sigs chan<- os.Signal, errOut *lockedBuffer, done <-chan int) {
	t.Helper()
	fake := make(fakeSignals, 1)
	errOut = &lockedBuffer{}
	codes := make(chan int, 1)
	go func() {
		var out lockedBuffer
		codes <- runEnv(ctx, &env{streams: Streams{In: strings.NewReader(""), Out: &out, ErrOut: errOut}, notify: fake.notify}, args)
	}()
	select {
	case sigs = <-fake:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s did not watch for interrupts:\n%s", args[0], errOut.String())
	}
	if !waitFor(t, func() bool { return strings.Contains(errOut.String(), "swapping") }) {
		t.Fatalf("%s never started swapping:\n%s", args[0], errOut.String())
	}
	return sigs, errOut, codes
}

// The first Ctrl-C lets a running swap finish, the same for every command
// that swaps a binary into a service; the run was still cut short, so it
// exits 130.
func TestFirstInterruptLetsTheSwapFinish(t *testing.T) {
	for _, tc := range interruptCases {
		t.Run(tc.name, func(t *testing.T) {
			args, swapped := tc.start(t, time.Second)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sigs, errOut, done := startInterruptible(t, ctx, args)
			cancel() // what main's signal.NotifyContext does on the first Ctrl-C
			sigs <- os.Interrupt
			select {
			case code := <-done:
				if code != exitcode.Interrupted {
					t.Errorf("exit %d after the swap finished, want %d:\n%s", code, exitcode.Interrupted, errOut.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("did not end after the swap:\n%s", errOut.String())
			}
			if !strings.Contains(errOut.String(), "Ctrl-C again to give up") {
				t.Errorf("stderr does not say what a second Ctrl-C does:\n%s", errOut.String())
			}
			if !swapped() {
				t.Errorf("the swap in progress did not finish:\n%s", errOut.String())
			}
		})
	}
}

// Ctrl-C ends a --watch: with exit 0 between swaps (that is how a watch
// ends), with 130 when it cut a swap short (the swap finishes first).
func TestInterruptedWatchDuringASwap(t *testing.T) {
	args, swapped := interruptCases[0].start(t, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs, errOut, done := startInterruptible(t, ctx, append(args, "--watch"))
	cancel()
	sigs <- os.Interrupt
	select {
	case code := <-done:
		if code != exitcode.Interrupted {
			t.Errorf("exit %d, want %d:\n%s", code, exitcode.Interrupted, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("did not end after the swap:\n%s", errOut.String())
	}
	if !swapped() {
		t.Errorf("the swap in progress did not finish:\n%s", errOut.String())
	}
}

// The second Ctrl-C gives up on a swap that does not end (here: an op
// that would take an hour).
func TestSecondInterruptGivesUp(t *testing.T) {
	for _, tc := range interruptCases {
		t.Run(tc.name, func(t *testing.T) {
			args, _ := tc.start(t, time.Hour)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sigs, errOut, done := startInterruptible(t, ctx, args)
			cancel()
			sigs <- os.Interrupt
			sigs <- os.Interrupt
			select {
			case code := <-done:
				if code != exitcode.Interrupted {
					t.Errorf("exit %d after giving up, want %d:\n%s", code, exitcode.Interrupted, errOut.String())
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("the second Ctrl-C did not give up:\n%s", errOut.String())
			}
			if !strings.Contains(errOut.String(), "interrupted again: giving up") {
				t.Errorf("stderr does not say it gave up:\n%s", errOut.String())
			}
			// What follows the second Ctrl-C speaks of the swap, not of
			// ops or contexts.
			for _, internal := range []string{"context canceled", "op service-swap", "op wins-verify", "cmd.exe", "trying again"} {
				if strings.Contains(errOut.String(), internal) {
					t.Errorf("stderr says %q after the second Ctrl-C:\n%s", internal, errOut.String())
				}
			}
		})
	}
}

// Ctrl-C while a --watch waits between swaps says that none was in
// progress, and ends the watch with exit 0; -o json printed each run as
// one document on one line.
func TestInterruptedIdleWatch(t *testing.T) {
	fx := newKubeFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := make(fakeSignals, 1)
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		args := []string{"kubernetes", "-c", fx.config, "--cache-dir", fx.cache, "--no-color", "--only", "kubelet", "-o", "json",
			"--watch", "--debounce", "100ms", "--stop-timeout", "300ms", "--start-timeout", "3s", "--settle", "100ms", "--health-timeout", "500ms"}
		done <- runEnv(ctx, &env{streams: Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, notify: fake.notify}, args)
	}()
	sigs := <-fake
	if !waitFor(t, func() bool { return strings.Contains(errOut.String(), "watching 1 source") }) {
		t.Fatalf("the watch did not start:\n%s", errOut.String())
	}
	sigs <- os.Interrupt
	if !waitFor(t, func() bool { return strings.Contains(errOut.String(), "interrupted: stopping") }) {
		t.Fatalf("no word of the interrupt:\n%s", errOut.String())
	}
	cancel()
	if code := <-done; code != exitcode.OK {
		t.Errorf("exit %d, want 0:\n%s", code, errOut.String())
	}
	if s := errOut.String(); strings.Contains(s, "a swap in progress finishes first") || !strings.Contains(s, "no swap was in progress") {
		t.Errorf("the interrupt's message does not say that nothing was being swapped:\n%s", s)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], `{"apiVersion":`) || !strings.HasSuffix(lines[0], "}") {
		t.Errorf("stdout is not one document on one line:\n%s", out.String())
	}
}
