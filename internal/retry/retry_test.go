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

// A try budget: fn runs that often at most, each try numbered.
func TestPolicyTries(t *testing.T) {
	p := Policy{Tries: 3, Pause: time.Millisecond, ShouldRetry: func(err error) bool { return errors.Is(err, errBusy) }}
	var got []int
	err := p.Do(context.Background(), func(_ context.Context, try int) error {
		got = append(got, try)
		return errBusy
	})
	var ex *ExhaustedError
	if !errors.As(err, &ex) || ex.Tries != 3 || !errors.Is(err, errBusy) {
		t.Errorf("err = %v, want exhausted after 3 tries of busy", err)
	}
	if len(got) != 3 || got[0] != 1 || got[2] != 3 {
		t.Errorf("tries numbered %v, want 1, 2, 3", got)
	}
	// Without ShouldRetry nothing is retried.
	tries := 0
	err = Policy{Tries: 3}.Do(context.Background(), func(context.Context, int) error { tries++; return errBusy })
	if tries != 1 || err != errBusy {
		t.Errorf("no ShouldRetry: %d tries, err %v; want 1 and busy as is", tries, err)
	}
}

// A failure that is ctx's own end is returned as it is.
func TestPolicyContextError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Policy{Tries: 5, ShouldRetry: func(error) bool { return true }}.Do(ctx, func(ctx context.Context, _ int) error { return ctx.Err() })
	if err != context.Canceled {
		t.Errorf("err = %v, want context.Canceled as is", err)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on an ended context = %v, want canceled", err)
	}
}

func TestPoll(t *testing.T) {
	checks := 0
	err := Poll(context.Background(), time.Millisecond, func(context.Context) (bool, error) {
		checks++
		return checks == 3, nil
	})
	if err != nil || checks != 3 {
		t.Errorf("Poll = %v after %d checks, want done after 3", err, checks)
	}
	err = Poll(context.Background(), time.Millisecond, func(context.Context) (bool, error) { return false, errBusy })
	if err != errBusy {
		t.Errorf("Poll = %v, want the check's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = Poll(ctx, time.Hour, func(context.Context) (bool, error) { cancel(); return false, nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Poll = %v, want canceled", err)
	}
}
