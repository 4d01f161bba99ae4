package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A read cut short by the end of the wait (the context, or client-go's
// rate limiter refusing to wait past the deadline) is not the wait's
// failure: WaitNode then says what the Node lacked.
func TestWaitEnding(t *testing.T) {
	limiter := fmt.Errorf("client rate limiter Wait returned an error: %w", errors.New("rate: Wait(n=1) would exceed context deadline"))
	done, cancel := context.WithCancel(context.Background())
	cancel()
	bounded, stop := context.WithTimeout(context.Background(), time.Hour)
	defer stop()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"context done", done, errors.New("connection refused"), true},
		{"limiter before the deadline", bounded, limiter, true},
		{"limiter without a deadline", context.Background(), limiter, false},
		{"a failure of its own", bounded, errors.New("forbidden"), false},
	}
	for _, tt := range tests {
		if got := waitEnding(tt.ctx, tt.err); got != tt.want {
			t.Errorf("%s: waitEnding = %v, want %v", tt.name, got, tt.want)
		}
	}
}
