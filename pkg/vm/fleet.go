package vm

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/fleet"
)

// Fleet is the workflow of swdt vm: the VMs behind some nodes of a node
// file, each driven through its own hypervisor, all in parallel. Each
// method is one verb and returns one Report per node, in node order.
type Fleet struct {
	nodes []v1alpha1.Node
	open  OpenFunc
}

// NewFleet returns the VMs behind nodes, reached through open (Open, or a
// test's stand-in). Every node must have spec.vm: one without is a usage
// error naming it, before any hypervisor is contacted. The error does not
// name the node file: callers add it.
func NewFleet(nodes []v1alpha1.Node, open OpenFunc) (*Fleet, error) {
	var missing []string
	for _, n := range nodes {
		if n.Spec.VM == nil {
			missing = append(missing, n.Name)
		}
	}
	if len(missing) > 0 {
		return nil, usage(fmt.Errorf("node %s has no spec.vm: add one naming the VM and its hypervisor (see the commented vm section of 'swdt config init')",
			strings.Join(missing, ", ")))
	}
	return &Fleet{nodes: nodes, open: open}, nil
}

// Report is the outcome of a verb on one node's VM.
type Report[T any] struct {
	fleet.Result[T]
	// VM is the VM's name (spec.vm.name).
	VM string
}

// Err is the outcome of the run as one error, as fleet.Err has it.
func Err[T any](reports []Report[T]) error {
	results := make([]fleet.Result[T], len(reports))
	for i, r := range reports {
		results[i] = r.Result
	}
	return fleet.Err(results, nil)
}

// run opens every node's hypervisor and calls fn with it.
func run[T any](ctx context.Context, f *Fleet, fn func(ctx context.Context, p Provider) (T, error)) []Report[T] {
	results := fleet.Run(ctx, f.nodes, 0, func(ctx context.Context, spec *v1alpha1.Node) (T, error) {
		var zero T
		p, err := f.open(ctx, spec)
		if err != nil {
			return zero, err
		}
		defer p.Close()
		return fn(ctx, p)
	})
	reports := make([]Report[T], len(results))
	for i, r := range results {
		reports[i] = Report[T]{Result: r, VM: f.nodes[i].Spec.VM.Name}
	}
	return reports
}

// StatusResult is a VM's state and snapshots.
type StatusResult struct {
	Status Status `json:"status"`
}

// Status reports each VM's state and snapshots. Nothing is changed.
func (f *Fleet) Status(ctx context.Context) []Report[StatusResult] {
	return run(ctx, f, func(ctx context.Context, p Provider) (StatusResult, error) {
		st, err := p.Status(ctx)
		return StatusResult{Status: st}, err
	})
}

// StartResult is the outcome of Start.
type StartResult struct {
	// AlreadyRunning says the VM was running and was left alone.
	AlreadyRunning bool `json:"alreadyRunning"`
}

// Start starts (or resumes) each VM; running ones are left alone.
func (f *Fleet) Start(ctx context.Context) []Report[StartResult] {
	return run(ctx, f, func(ctx context.Context, p Provider) (StartResult, error) {
		already, err := p.Start(ctx)
		return StartResult{AlreadyRunning: already}, err
	})
}

// Stop shuts each VM down, turning it off when it is not off within
// timeout.
func (f *Fleet) Stop(ctx context.Context, timeout time.Duration) []Report[Stopped] {
	return run(ctx, f, func(ctx context.Context, p Provider) (Stopped, error) {
		return p.Stop(ctx, timeout)
	})
}

// SnapshotResult names the snapshot taken.
type SnapshotResult struct {
	Snapshot string `json:"snapshot"`
}

// Snapshot takes a snapshot called name of each VM.
func (f *Fleet) Snapshot(ctx context.Context, name string) []Report[SnapshotResult] {
	return run(ctx, f, func(ctx context.Context, p Provider) (SnapshotResult, error) {
		return SnapshotResult{Snapshot: name}, p.Snapshot(ctx, name)
	})
}

// RevertResult is the snapshot a VM went back to and its state after.
type RevertResult struct {
	Snapshot string `json:"snapshot"`
	State    State  `json:"state"`
}

// Revert puts each VM back to its snapshot called name.
func (f *Fleet) Revert(ctx context.Context, name string) []Report[RevertResult] {
	return run(ctx, f, func(ctx context.Context, p Provider) (RevertResult, error) {
		st, err := p.Revert(ctx, name)
		return RevertResult{Snapshot: name, State: st}, err
	})
}

// SnapshotsResult is a VM's snapshots, oldest first; never nil.
type SnapshotsResult struct {
	Snapshots []Snapshot `json:"snapshots"`
}

// Snapshots lists each VM's snapshots. Nothing is changed.
func (f *Fleet) Snapshots(ctx context.Context) []Report[SnapshotsResult] {
	return run(ctx, f, func(ctx context.Context, p Provider) (SnapshotsResult, error) {
		snaps, err := p.Snapshots(ctx)
		if snaps == nil {
			snaps = []Snapshot{}
		}
		return SnapshotsResult{Snapshots: snaps}, err
	})
}

// AddressesResult is a VM's IP addresses, IPv4 first; never nil.
type AddressesResult struct {
	Addresses []Address `json:"addresses"`
}

// Addresses lists each VM's IP addresses as its hypervisor knows them.
// Nothing is changed.
func (f *Fleet) Addresses(ctx context.Context) []Report[AddressesResult] {
	return run(ctx, f, func(ctx context.Context, p Provider) (AddressesResult, error) {
		addrs, err := p.Addresses(ctx)
		if addrs == nil {
			addrs = []Address{}
		}
		return AddressesResult{Addresses: addrs}, err
	})
}
