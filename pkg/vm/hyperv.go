package vm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
)

// hypervHost is what a Hyper-V VM is driven through: the Hyper-V ops of
// swdt-agent, run on a host reached over SSH (*node.Node, which delivers
// the agent to it) or, on Windows, in this process against this machine.
// A failure the host reports is a *ops.Error either way.
type hypervHost interface {
	HyperVVMStatus(ctx context.Context, req ops.HyperVVMRequest) (ops.HyperVVMInfo, error)
	HyperVVMStart(ctx context.Context, req ops.HyperVVMRequest) (ops.HyperVStartResponse, error)
	HyperVVMStop(ctx context.Context, req ops.HyperVStopRequest) (ops.HyperVStopResponse, error)
	HyperVCheckpointCreate(ctx context.Context, req ops.HyperVCheckpointRequest) (ops.HyperVCheckpoint, error)
	HyperVCheckpointRestore(ctx context.Context, req ops.HyperVCheckpointRequest) (ops.HyperVVMInfo, error)
	HyperVCheckpointList(ctx context.Context, req ops.HyperVVMRequest) (ops.HyperVCheckpointsResponse, error)
	HyperVVMAddresses(ctx context.Context, req ops.HyperVVMRequest) (ops.HyperVAddressesResponse, error)
	Close() error
}

var _ hypervHost = (*node.Node)(nil)

// hypervVM is one Hyper-V VM, driven through the Hyper-V ops of its host.
type hypervVM struct {
	name  string
	where string // the host as written, or "this machine"
	host  hypervHost
}

// openHyperV reaches the Hyper-V host (over SSH, or this machine when
// spec.hyperv.host is empty and swdt runs on Windows) and checks that the
// VM exists.
func openHyperV(ctx context.Context, spec *v1alpha1.VMSpec, creds v1alpha1.CredentialsSpec, opts Options) (Provider, error) {
	host := ""
	if spec.HyperV != nil {
		host = spec.HyperV.Host
	}
	v := &hypervVM{name: spec.Name, where: host}
	if host == "" {
		v.where = "this machine"
		h, err := localHyperV(v)
		if err != nil {
			return nil, err
		}
		v.host = h
	} else {
		dctx, cancel := context.WithTimeout(ctx, opts.dialTimeout())
		defer cancel()
		h, err := node.DialHost(dctx, host, creds, opts.dialTimeout(), opts.hop(opts.logger().With("vm", spec.Name)))
		if err != nil {
			return nil, fmt.Errorf("%s: %w: ssh to %s: %w", v.Describe(), ErrUnreachable, host, err)
		}
		v.host = h
	}
	if _, err := v.Status(ctx); err != nil {
		_ = v.Close()
		return nil, err
	}
	return v, nil
}

func (v *hypervVM) Describe() string {
	return fmt.Sprintf("VM %q (Hyper-V on %s)", v.name, v.where)
}

func (v *hypervVM) Close() error {
	if err := v.host.Close(); err != nil {
		return fmt.Errorf("%s: close the connection to the Hyper-V host: %w", v.Describe(), err)
	}
	return nil
}

// opError names the VM in an op's error and maps the failures the host
// reports to this package's errors; the ones that mean a wrong name in the
// node file or on the command line, or a host that is no Hyper-V host,
// are usage errors.
func (v *hypervVM) opError(err error) error {
	if err == nil {
		return nil
	}
	var oe *ops.Error
	if !errors.As(err, &oe) {
		return fmt.Errorf("%s: %w", v.Describe(), err)
	}
	var sentinel error
	switch oe.Kind {
	case ops.KindVMNotFound:
		sentinel = ErrVMNotFound
	case ops.KindCheckpointNotFound:
		sentinel = ErrSnapshotNotFound
	case ops.KindCheckpointExists:
		sentinel = ErrSnapshotExists
	case ops.KindNoHyperV, ops.KindAmbiguous:
		return usage(fmt.Errorf("%s: %w", v.Describe(), err))
	default:
		return fmt.Errorf("%s: %w", v.Describe(), err)
	}
	return usage(fmt.Errorf("%s: %w: %s", v.Describe(), sentinel, oe.Message))
}

// hypervState maps Hyper-V's VMState names to State.
func hypervState(s string) State {
	switch s {
	case "Running", "RunningCritical":
		return StateRunning
	case "Off", "OffCritical":
		return StateOff
	case "Saved", "SavedCritical", "FastSaved", "FastSavedCritical", "Saving", "FastSaving":
		return StateSaved
	case "Paused", "PausedCritical", "Pausing":
		return StatePaused
	case "Starting", "StartingCritical", "Resuming", "Reset":
		return StateStarting
	case "Stopping", "StoppingCritical", "ForceShutdown":
		return StateStopping
	}
	return StateOther
}

func (v *hypervVM) Status(ctx context.Context) (Status, error) {
	info, err := v.host.HyperVVMStatus(ctx, ops.HyperVVMRequest{Name: v.name})
	if err != nil {
		return Status{}, v.opError(err)
	}
	return Status{Name: info.Name, Provider: v1alpha1.VMProviderHyperV, Hypervisor: v.where,
		State: hypervState(info.State), Snapshots: info.Checkpoints, CurrentSnapshot: info.CurrentCheckpoint}, nil
}

func (v *hypervVM) Start(ctx context.Context) (bool, error) {
	resp, err := v.host.HyperVVMStart(ctx, ops.HyperVVMRequest{Name: v.name})
	return resp.AlreadyRunning, v.opError(err)
}

func (v *hypervVM) Stop(ctx context.Context, timeout time.Duration) (Stopped, error) {
	req := ops.HyperVStopRequest{Name: v.name, TimeoutSeconds: max(1, int(timeout.Round(time.Second)/time.Second))}
	resp, err := v.host.HyperVVMStop(ctx, req)
	return Stopped{Forced: resp.Forced, AlreadyOff: resp.AlreadyOff}, v.opError(err)
}

func (v *hypervVM) Snapshot(ctx context.Context, name string) error {
	if err := CheckSnapshotName(name); err != nil {
		return err
	}
	_, err := v.host.HyperVCheckpointCreate(ctx, ops.HyperVCheckpointRequest{Name: v.name, Checkpoint: name})
	return v.opError(err)
}

func (v *hypervVM) Revert(ctx context.Context, name string) (State, error) {
	info, err := v.host.HyperVCheckpointRestore(ctx, ops.HyperVCheckpointRequest{Name: v.name, Checkpoint: name})
	return hypervState(info.State), v.opError(err)
}

func (v *hypervVM) Snapshots(ctx context.Context) ([]Snapshot, error) {
	resp, err := v.host.HyperVCheckpointList(ctx, ops.HyperVVMRequest{Name: v.name})
	if err != nil {
		return nil, v.opError(err)
	}
	out := make([]Snapshot, 0, len(resp.Checkpoints))
	for _, c := range resp.Checkpoints {
		created, err := time.Parse(time.RFC3339Nano, c.Created)
		if err != nil {
			return nil, fmt.Errorf("%s: checkpoint %s: creation time %q: %w", v.Describe(), c.Name, c.Created, err)
		}
		out = append(out, Snapshot{Name: c.Name, Created: created.UTC(), Parent: c.Parent, Current: c.Name == resp.Current})
	}
	return out, nil
}

func (v *hypervVM) Addresses(ctx context.Context) ([]Address, error) {
	resp, err := v.host.HyperVVMAddresses(ctx, ops.HyperVVMRequest{Name: v.name})
	if err != nil {
		return nil, v.opError(err)
	}
	var out []Address
	for _, a := range resp.Adapters {
		for _, ip := range a.Addresses {
			out = append(out, Address{Interface: a.Name, MAC: a.MAC, IP: ip, Source: "adapter"})
		}
	}
	return sortAddresses(out), nil
}
