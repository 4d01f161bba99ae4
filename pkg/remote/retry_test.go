package remote

import (
	"context"
	"errors"
	"testing"

	"sigs.k8s.io/swdt/internal/retry"
)

func TestRetry(t *testing.T) {
	errTransient := errors.New("transient")
	errFatal := errors.New("fatal")
	policy := retry.Policy{Tries: 3, ShouldRetry: func(err error) bool { return errors.Is(err, errTransient) }}
	tests := []struct {
		name      string
		results   []error
		wantCalls int
		check     func(error) bool
	}{
		{"success first", []error{nil}, 1, func(err error) bool { return err == nil }},
		{"success after transient", []error{errTransient, nil}, 2, func(err error) bool { return err == nil }},
		{"fatal not retried", []error{errFatal, nil}, 1, func(err error) bool { return errors.Is(err, errFatal) }},
		{"budget exhausted", []error{errTransient, errTransient, errTransient, nil}, 3, func(err error) bool {
			var re *RetriesExhaustedError
			return errors.As(err, &re) && re.Attempts == 3 && errors.Is(err, errTransient) && re.Op == "op"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := withRetry(t.Context(), "op", policy, func(ctx context.Context, attempt int) error {
				calls++
				if attempt != calls {
					t.Errorf("attempt %d on call %d", attempt, calls)
				}
				return tt.results[calls-1]
			})
			if calls != tt.wantCalls || !tt.check(err) {
				t.Fatalf("calls = %d, err = %v", calls, err)
			}
		})
	}

	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	err := withRetry(ctx, "op", policy, func(ctx context.Context, attempt int) error {
		calls++
		cancel()
		return errTransient
	})
	if calls != 1 || !errors.Is(err, errTransient) {
		t.Fatalf("cancelled retry: calls = %d, err = %v", calls, err)
	}
}
