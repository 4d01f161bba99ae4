package app

import (
	"time"

	"github.com/spf13/pflag"

	"sigs.k8s.io/swdt/pkg/hotswap"
)

// swapFlags are the service timing flags of every command that swaps a
// binary into a running service (kubernetes, wins), so both behave alike.
type swapFlags struct {
	stopTimeout   time.Duration
	startTimeout  time.Duration
	settle        time.Duration
	healthTimeout time.Duration
	lockWait      time.Duration
}

func (s *swapFlags) add(fl *pflag.FlagSet) {
	fl.DurationVar(&s.stopTimeout, "stop-timeout", hotswap.DefaultStopTimeout, "how long a service may take to stop before its process is killed")
	fl.DurationVar(&s.startTimeout, "start-timeout", hotswap.DefaultStartTimeout, "how long a service may take to reach Running")
	fl.DurationVar(&s.settle, "settle", hotswap.DefaultSettle, "how long started services must stay Running before they count as up")
	fl.DurationVar(&s.healthTimeout, "health-timeout", hotswap.DefaultHealthTimeout, "how long health checks are retried")
	fl.DurationVar(&s.lockWait, "lock-wait", hotswap.DefaultLockWait, "how long to wait while another swdt run holds the node's swap lock")
}

// options returns hot-swap options with the flags' timings.
func (s swapFlags) options() hotswap.Options {
	return hotswap.Options{
		StopTimeout:   s.stopTimeout,
		StartTimeout:  s.startTimeout,
		Settle:        s.settle,
		HealthTimeout: s.healthTimeout,
		LockWait:      s.lockWait,
	}
}
