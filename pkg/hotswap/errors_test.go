package hotswap

import (
	"errors"
	"testing"
)

func TestItemError(t *testing.T) {
	cause := errors.New("op service-swap on node win1: ssh connection lost")
	tests := []struct {
		name string
		err  *ItemError
		want string
	}{
		{name: "the cause alone", err: &ItemError{Err: cause}, want: cause.Error()},
		{name: "what it left, then the advice", err: &ItemError{Err: cause, Left: []string{"repair failed too: timeout"}, Advice: "run swdt again"},
			want: cause.Error() + "; repair failed too: timeout; run swdt again"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			if !errors.Is(tc.err, cause) {
				t.Error("the cause does not unwrap")
			}
		})
	}
}

func TestSwapFailureMissingPipe(t *testing.T) {
	sf := &SwapFailure{Service: "rancher-wins", Message: `health check failed: named pipe \\.\pipe\rancher_wins does not exist although the service has been Running for 5s`}
	var err error = &ItemError{Err: sf}
	var got *SwapFailure
	if !errors.As(err, &got) || !got.MissingPipe("rancher_wins") || got.MissingPipe("rancher_wins_proxy") {
		t.Errorf("%v: want the pipe rancher_wins missing, and only it", err)
	}
}
