package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

var errBusy = errors.New("busy")

func TestDo(t *testing.T) {
	errOther := errors.New("other")
	tests := []struct {
		name string
		// fails is how many tries fail with errBusy before fn succeeds
		// (-1: always), then with final.
		fails   int
		final   error
		budget  time.Duration
		wantErr error
		// wantExhausted says the error is an *ExhaustedError.
		wantExhausted bool
		wantTries     int
	}{
		{name: "first try", fails: 0, budget: time.Second, wantTries: 1},
		{name: "after busy tries", fails: 3, budget: time.Hour, wantTries: 4},
		{name: "not retried", fails: 1, final: errOther, budget: time.Hour, wantErr: errOther, wantTries: 2},
		{name: "budget spent", fails: -1, budget: 30 * time.Millisecond, wantErr: errBusy, wantExhausted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tries := 0
			err := Do(context.Background(), tt.budget, func(err error) bool { return errors.Is(err, errBusy) }, func() error {
				tries++
				if tt.fails < 0 || tries <= tt.fails {
					return errBusy
				}
				return tt.final
			})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			var ex *ExhaustedError
			if errors.As(err, &ex) != tt.wantExhausted {
				t.Errorf("err = %v; exhausted: %v, want %v", err, ex != nil, tt.wantExhausted)
			}
			if tt.wantExhausted && ex.Elapsed < tt.budget {
				t.Errorf("gave up after %s, before the budget of %s", ex.Elapsed, tt.budget)
			}
			if tt.wantTries != 0 && tries != tt.wantTries {
				t.Errorf("tries = %d, want %d", tries, tt.wantTries)
			}
		})
	}
}

func TestDoEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := Do(ctx, time.Hour, func(error) bool { return true }, func() error { cancel(); return errBusy })
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errBusy) {
		t.Errorf("err = %v, want canceled while retrying busy", err)
	}
}
