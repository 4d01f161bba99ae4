package app

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"sigs.k8s.io/swdt/pkg/exitcode"
)

func notifySignals(c chan<- os.Signal) func() {
	signal.Notify(c, interruptSignals()...)
	return func() { signal.Stop(c) }
}

// interruptSignals are the signals handled like Ctrl-C (DESIGN.md §9).
// SIGHUP, from a terminal that was closed, is one of them, so that a swap
// in progress still finishes; unless it is ignored (nohup), since the
// user then asked for the run to outlive the terminal. Windows delivers
// only os.Interrupt of these.
func interruptSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// NotifyContext returns a copy of parent that is cancelled by the first
// signal swdt handles like Ctrl-C (SIGINT, SIGTERM and SIGHUP), for Run;
// stop releases the signals.
func NotifyContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(parent, interruptSignals()...)
}

// interrupts is the two-stage Ctrl-C of every command that swaps a
// binary into a running service (DESIGN.md §9). The first interrupt
// cancels the run's context (main), which stops staging but lets a swap in
// progress finish so that its services run again; the second ends the
// returned context, to be passed as hotswap.Options.Abort, which gives
// up on the swap at once. warn tells the user which stage they are in;
// swapping, when not nil, says whether a swap is in progress (a --watch
// waits between swaps). stop releases the signals.
func (e *env) interrupts(warn func(format string, args ...any), swapping func() bool) (abort context.Context, stop func()) {
	abort, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	stopNotify := e.notify(sigs)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for count := 1; ; count++ {
			select {
			case <-done:
				return
			case <-sigs:
			}
			if count == 1 && swapping != nil && !swapping() {
				warn("interrupted: stopping; no swap was in progress")
				continue
			}
			if count == 1 {
				warn("interrupted: stopping; a swap in progress finishes first so that its services run again; Ctrl-C again to give up now")
				continue
			}
			warn("interrupted again: giving up; check the services on the node (Get-Service)")
			cancel()
			return
		}
	})
	return abort, func() {
		stopNotify()
		close(done)
		wg.Wait()
		cancel()
	}
}

// finishedInterrupted is the outcome of a swapping command that returned
// without an error although Ctrl-C cancelled ctx: the swap in progress
// finished (or was rolled back) so that its services run again, but the
// run was cut short, so it exits 130 as DESIGN.md §9 says.
func finishedInterrupted(ctx context.Context, err error) error {
	if err != nil || ctx.Err() == nil {
		return err
	}
	return exitcode.WithCode(exitcode.Interrupted, errors.New("the swap in progress was finished so that its services run again; nothing after it was started"))
}
