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
	durationFlag(fl, &s.stopTimeout, "stop-timeout", hotswap.DefaultStopTimeout, false, "how long a service may take to stop before its process is killed")
	durationFlag(fl, &s.startTimeout, "start-timeout", hotswap.DefaultStartTimeout, false, "how long a service may take to reach Running")
	durationFlag(fl, &s.settle, "settle", hotswap.DefaultSettle, true, "how long started services must stay Running before they count as up (0: not at all)")
	durationFlag(fl, &s.healthTimeout, "health-timeout", hotswap.DefaultHealthTimeout, false, "how long health checks are retried")
	durationFlag(fl, &s.lockWait, "lock-wait", hotswap.DefaultLockWait, false, "how long to wait while another swdt run holds the node's swap lock")
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
