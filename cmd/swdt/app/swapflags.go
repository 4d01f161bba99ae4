package app

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/provision"
	"sigs.k8s.io/swdt/pkg/source"
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
	fl.DurationVar(&s.stopTimeout, "stop-timeout", provision.DefaultStopTimeout, "how long a service may take to stop before its process is killed")
	fl.DurationVar(&s.startTimeout, "start-timeout", provision.DefaultStartTimeout, "how long a service may take to reach Running")
	fl.DurationVar(&s.settle, "settle", provision.DefaultSettle, "how long started services must stay Running before they count as up")
	fl.DurationVar(&s.healthTimeout, "health-timeout", provision.DefaultHealthTimeout, "how long health checks are retried")
	fl.DurationVar(&s.lockWait, "lock-wait", provision.DefaultLockWait, "how long to wait while another swdt run holds the node's swap lock")
}

// options returns hot-swap options with the flags' timings.
func (s swapFlags) options() provision.Options {
	return provision.Options{
		StopTimeout:   s.stopTimeout,
		StartTimeout:  s.startTimeout,
		Settle:        s.settle,
		HealthTimeout: s.healthTimeout,
		LockWait:      s.lockWait,
	}
}

// openHashes opens the record of what swdt last saw of the node's
// destinations (size, time, digest), kept under the cache directory so a
// run with nothing changed need not read every binary on the node. It is
// nil when there is no cache directory: every destination is then hashed.
func openHashes(cacheDir string, spec *v1alpha1.Node) *provision.FileHashCache {
	dir, err := source.CacheDir(cacheDir)
	if err != nil {
		return nil
	}
	c := spec.Spec.Credentials
	key := sha256.Sum256([]byte(c.Hostname + "\x00" + c.Username))
	return provision.OpenFileHashCache(filepath.Join(dir, "nodes", hex.EncodeToString(key[:12])+".json"))
}
