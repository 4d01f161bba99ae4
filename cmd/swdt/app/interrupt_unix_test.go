//go:build unix

package app

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/exitcode"
)

// SIGHUP (a closed terminal) is handled like Ctrl-C, with real signals
// sent to this process: the first lets the swap in progress finish, the
// second gives up.
func TestHangupIsHandledLikeCtrlC(t *testing.T) {
	// Should swdt not handle SIGHUP, this keeps the test process alive
	// so that the test fails rather than the whole package.
	guard := make(chan os.Signal, 1)
	signal.Notify(guard, syscall.SIGHUP)
	defer signal.Stop(guard)

	tests := []struct {
		name     string
		latency  time.Duration
		hangups  int
		wantText string
	}{
		{"one SIGHUP lets the swap finish", time.Second, 1, "a swap in progress finishes first"},
		{"a second SIGHUP gives up", time.Hour, 2, "interrupted again: giving up"},
	}
	for _, tc := range interruptCases {
		for _, tt := range tests {
			t.Run(tc.name+"/"+tt.name, func(t *testing.T) {
				args, swapped := tc.start(t, tt.latency)
				ctx, stop := NotifyContext(context.Background())
				defer stop()
				errOut := &lockedBuffer{}
				done := make(chan int, 1)
				go func() {
					done <- Run(ctx, Streams{In: strings.NewReader(""), Out: &lockedBuffer{}, ErrOut: errOut}, args)
				}()
				if !waitFor(t, func() bool { return strings.Contains(errOut.String(), "swapping") }) {
					t.Fatalf("never started swapping:\n%s", errOut.String())
				}
				for range tt.hangups {
					if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
						t.Fatal(err)
					}
					// Let the first be seen before the second is sent.
					if !waitFor(t, func() bool { return strings.Contains(errOut.String(), "interrupted") }) {
						t.Fatalf("SIGHUP was not handled:\n%s", errOut.String())
					}
				}
				var code int
				select {
				case code = <-done:
				case <-time.After(30 * time.Second):
					t.Fatalf("did not end after SIGHUP:\n%s", errOut.String())
				}
				if ctx.Err() == nil {
					t.Error("SIGHUP did not cancel the run's context as Ctrl-C does")
				}
				if !strings.Contains(errOut.String(), tt.wantText) {
					t.Errorf("stderr does not say %q:\n%s", tt.wantText, errOut.String())
				}
				if tt.hangups == 1 && !swapped() {
					t.Errorf("the swap in progress did not finish:\n%s", errOut.String())
				}
				if code != exitcode.Interrupted {
					t.Errorf("exit %d, want %d:\n%s", code, exitcode.Interrupted, errOut.String())
				}
			})
		}
	}
}

// Under nohup SIGHUP stays ignored: handling it would end a run that the
// user asked to outlive the terminal.
func TestIgnoredHangupStaysIgnored(t *testing.T) {
	signal.Ignore(syscall.SIGHUP)
	defer signal.Reset(syscall.SIGHUP)
	for _, s := range interruptSignals() {
		if s == syscall.SIGHUP {
			t.Fatalf("interruptSignals() = %v: includes an ignored SIGHUP", interruptSignals())
		}
	}
}
