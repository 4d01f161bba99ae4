package vm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/retry"
)

// addressPoll is how often WaitForAddress asks the hypervisor again.
const addressPoll = 2 * time.Second

// Probe tries to reach the guest's SSH server at ip. It returns nil when
// SSH answers; retry says the failure may go away once the guest has
// booted (nothing listens yet), as opposed to one that will not (a
// rejected key).
type Probe func(ctx context.Context, ip string) (retry bool, err error)

// WaitForAddress asks p for the VM's addresses, and probe whether SSH
// answers on one, until it does or timeout passes, and returns that
// address. A VM that is not running fails at once: waiting would not help.
func WaitForAddress(ctx context.Context, p Provider, timeout time.Duration, probe Probe) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, err := p.Status(ctx)
	if err != nil {
		return "", err
	}
	switch st.State {
	case StateRunning, StateStarting:
	default:
		return "", fmt.Errorf("%s is %s, so it has no address: start it with 'swdt vm start' (or set credentials.hostname)", p.Describe(), st.State)
	}
	var (
		seen    []string
		lastErr error
		found   string
	)
	err = retry.Poll(ctx, addressPoll, func(ctx context.Context) (bool, error) {
		addrs, err := p.Addresses(ctx)
		if err != nil && ctx.Err() == nil {
			return false, err
		}
		for _, a := range addrs {
			if !slices.Contains(seen, a.IP) {
				seen = append(seen, a.IP)
			}
			again, err := probe(ctx, a.IP)
			if err == nil {
				found = a.IP
				return true, nil
			}
			if !again {
				return false, err
			}
			lastErr = err
		}
		return false, nil
	})
	switch {
	case err == nil:
		return found, nil
	case ctx.Err() != nil:
		return "", noAddressError(p, timeout, seen, lastErr)
	}
	return "", err
}

func noAddressError(p Provider, timeout time.Duration, seen []string, lastErr error) error {
	if len(seen) == 0 {
		return fmt.Errorf("%s: %w after %s: check that the guest booted and got an address (libvirt: a DHCP lease on a libvirt network or qemu-guest-agent; Hyper-V: integration services), raise spec.vm.addressTimeout, or set credentials.hostname",
			p.Describe(), ErrNoAddress, timeout)
	}
	return fmt.Errorf("%s: %w on which SSH answers after %s (it reported %s; last try: %w): check that sshd runs in the guest and its firewall allows port 22",
		p.Describe(), ErrNoAddress, timeout, strings.Join(seen, ", "), lastErr)
}
