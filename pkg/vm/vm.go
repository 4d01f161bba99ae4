// Package vm drives the virtual machine behind a node through its
// hypervisor: libvirt (libvirtd's RPC protocol, over its unix socket or
// through SSH) or Hyper-V (swdt-agent's Hyper-V ops, which run fixed
// PowerShell scripts with names passed as JSON data, on a Hyper-V host
// reached over SSH like a node, or in this process when swdt runs on the
// Hyper-V host). It reports state, starts and stops the VM, takes, lists
// and reverts snapshots, and reads the VM's IP addresses. Fleet is the
// workflow of swdt vm: one verb on the VMs of several nodes in parallel.
//
// It never prints. It talks to the Windows guest only to find an address
// on which SSH answers (WaitForAddress, used by ConnectNode to dial a node
// that has no hostname).
package vm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"slices"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// State is a VM's power state, the same words for every hypervisor.
type State string

// The states swdt reports.
const (
	StateRunning  State = "running"
	StateOff      State = "off"
	StatePaused   State = "paused"
	StateSaved    State = "saved"
	StateStarting State = "starting"
	StateStopping State = "stopping"
	StateCrashed  State = "crashed"
	StateOther    State = "other"
)

// Status is what a hypervisor says about a VM.
type Status struct {
	// Name is the VM's name.
	Name string `json:"name"`
	// Provider is libvirt or hyperv.
	Provider v1alpha1.VMProvider `json:"provider"`
	// Hypervisor is where it runs: the libvirt URI or the Hyper-V host.
	Hypervisor string `json:"hypervisor"`
	// State is the power state.
	State State `json:"state"`
	// Snapshots counts the VM's snapshots.
	Snapshots int `json:"snapshots"`
	// CurrentSnapshot is the snapshot the VM's state descends from, if any.
	CurrentSnapshot string `json:"currentSnapshot,omitempty"`
}

// Snapshot is one snapshot (Hyper-V: checkpoint) of a VM.
type Snapshot struct {
	// Name is the snapshot's name.
	Name string `json:"name"`
	// Created is when it was taken.
	Created time.Time `json:"created"`
	// Parent is the snapshot it was taken on top of, if any.
	Parent string `json:"parent,omitempty"`
	// Current says the VM's state descends from this snapshot.
	Current bool `json:"current"`
}

// Address is one IP address of a VM's network interface.
type Address struct {
	// Interface is the interface's name as the hypervisor reports it.
	Interface string `json:"interface"`
	// MAC is the interface's hardware address.
	MAC string `json:"mac,omitempty"`
	// IP is the address, without prefix length.
	IP string `json:"ip"`
	// Source is where it was learnt: lease, agent or arp (libvirt),
	// adapter (Hyper-V).
	Source string `json:"source"`
}

// Stopped is the outcome of Stop.
type Stopped struct {
	// Forced says the VM did not shut down in time and was turned off.
	Forced bool `json:"forced"`
	// AlreadyOff says the VM was off before Stop.
	AlreadyOff bool `json:"alreadyOff"`
}

// Provider drives one VM on one hypervisor. Every method is bounded by
// its ctx; errors name the VM and the hypervisor.
type Provider interface {
	// Describe names the VM and its hypervisor for messages: VM "win2022"
	// (libvirt qemu:///system).
	Describe() string
	// Status reports the VM's state and snapshots.
	Status(ctx context.Context) (Status, error)
	// Start powers the VM on (or resumes it); a running VM is left alone.
	// It reports whether it was already running.
	Start(ctx context.Context) (alreadyRunning bool, err error)
	// Stop asks the guest to shut down and, when it is not off within
	// timeout, turns the VM off.
	Stop(ctx context.Context, timeout time.Duration) (Stopped, error)
	// Snapshot takes a snapshot named name. A name already taken is an
	// error that changes nothing.
	Snapshot(ctx context.Context, name string) error
	// Revert puts the VM back to the snapshot named name and reports the
	// VM's state afterwards.
	Revert(ctx context.Context, name string) (State, error)
	// Snapshots lists the VM's snapshots, oldest first.
	Snapshots(ctx context.Context) ([]Snapshot, error)
	// Addresses lists the VM's IP addresses, IPv4 first. Link-local
	// addresses, and the loopback ones a guest agent reports for the
	// guest's own loopback interface, are left out.
	Addresses(ctx context.Context) ([]Address, error)
	// Close ends the connection to the hypervisor.
	Close() error
}

// Errors a caller may test with errors.Is. Those that mean the node file
// or the command line names something that does not exist carry
// exitcode.Usage.
var (
	// ErrVMNotFound: the hypervisor has no VM of that name.
	ErrVMNotFound = errors.New("no such VM")
	// ErrSnapshotNotFound: the VM has no snapshot of that name.
	ErrSnapshotNotFound = errors.New("no such snapshot")
	// ErrSnapshotExists: the VM already has a snapshot of that name.
	ErrSnapshotExists = errors.New("snapshot already exists")
	// ErrUnreachable: the hypervisor could not be reached.
	ErrUnreachable = errors.New("hypervisor unreachable")
	// ErrNoAddress: the VM reported no usable address in time.
	ErrNoAddress = errors.New("VM has no address")
)

// usage marks err as a config or command-line error (exit code 2).
func usage(err error) error { return exitcode.WithCode(exitcode.Usage, err) }

// snapshotNameRE is what swdt lets a snapshot be called: safe as a file
// name and in every hypervisor's tools, of at most snapshotNameMax bytes
// (checked apart: a {0,127} compiles into over a hundred states at every
// swdt start).
var snapshotNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// snapshotNameMax is the longest snapshot name.
const snapshotNameMax = 128

// CheckSnapshotName rejects a snapshot name swdt would not create, as a
// usage error.
func CheckSnapshotName(name string) error {
	if len(name) > snapshotNameMax || !snapshotNameRE.MatchString(name) {
		return usage(fmt.Errorf("snapshot name %q: use letters, digits, '.', '_', '+' and '-', starting with a letter or digit, at most 128 characters", name))
	}
	return nil
}

// Options are the caller's hooks for reaching a hypervisor.
type Options struct {
	// Logger receives debug detail; nil discards.
	Logger *slog.Logger
	// Warn receives warnings the user must see (an insecure host key
	// policy on an SSH hop).
	Warn func(msg string)
	// Passphrase prompts for an encrypted key's passphrase on an SSH hop;
	// nil means no prompt.
	Passphrase func(keyFile string) ([]byte, error)
	// DialTimeout bounds reaching the hypervisor (default 15s).
	DialTimeout time.Duration
}

// DefaultDialTimeout bounds reaching a hypervisor when Options sets none.
const DefaultDialTimeout = 15 * time.Second

func (o Options) dialTimeout() time.Duration {
	if o.DialTimeout > 0 {
		return o.DialTimeout
	}
	return DefaultDialTimeout
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

// Open connects to the hypervisor of node's spec.vm and returns a Provider
// for its VM. It checks that the VM exists: a missing VM is ErrVMNotFound
// (exit code 2). SSH hops use the node's knownHostsFile and hostKeyPolicy.
func Open(ctx context.Context, node *v1alpha1.Node, opts Options) (Provider, error) {
	spec := node.Spec.VM
	if spec == nil {
		return nil, usage(fmt.Errorf("node %s has no spec.vm: add one naming the VM and its hypervisor", node.Name))
	}
	var (
		p   Provider
		err error
	)
	switch spec.Provider {
	case v1alpha1.VMProviderLibvirt:
		p, err = openLibvirt(ctx, spec, node.Spec.Credentials, opts)
	case v1alpha1.VMProviderHyperV:
		p, err = openHyperV(ctx, spec, node.Spec.Credentials, opts)
	default:
		return nil, usage(fmt.Errorf("spec.vm.provider %q is not supported: use libvirt or hyperv", spec.Provider))
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// sortAddresses puts IPv4 first and drops what cannot be dialled from
// outside the guest without more context (link-local, unspecified,
// multicast), keeping the order the hypervisor gave otherwise.
func sortAddresses(in []Address) []Address {
	out := make([]Address, 0, len(in))
	for _, a := range in {
		ip := net.ParseIP(a.IP)
		if ip == nil || ip.IsLinkLocalUnicast() || ip.IsUnspecified() || ip.IsMulticast() {
			continue
		}
		out = append(out, a)
	}
	slices.SortStableFunc(out, func(a, b Address) int {
		a4, b4 := net.ParseIP(a.IP).To4() != nil, net.ParseIP(b.IP).To4() != nil
		switch {
		case a4 && !b4:
			return -1
		case b4 && !a4:
			return 1
		}
		return 0
	})
	return out
}
