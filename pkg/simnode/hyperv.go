package simnode

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/vm/hvops"
)

// HyperVHost is the Hyper-V part of a machine that plays a Hyper-V host:
// its VMs, answering the ops of pkg/vm/hvops. A machine without it has no
// Hyper-V PowerShell module.
type HyperVHost struct {
	// VMs are the host's virtual machines. Hyper-V allows two VMs of the
	// same name; so does the model.
	VMs []*HyperVVM `json:"vms"`
}

// HyperVVM is one Hyper-V virtual machine.
type HyperVVM struct {
	// Name is the VM's name (case-insensitive, as Hyper-V compares it).
	Name string `json:"name"`
	// State is Hyper-V's VMState: Running, Off, Saved or Paused.
	State string `json:"state"`
	// Checkpoints in the order they were taken.
	Checkpoints []HyperVCheckpoint `json:"checkpoints,omitempty"`
	// Current is the checkpoint the VM's state descends from
	// (ParentSnapshotName).
	Current string `json:"current,omitempty"`
	// Adapters are the network adapters. Their addresses are reported
	// only while the VM runs, as the guest's integration services do.
	Adapters []HyperVAdapter `json:"adapters,omitempty"`
	// IgnoresShutdown plays a guest without the shutdown integration
	// service (or one that hangs): a graceful stop waits its whole
	// timeout and the VM is then turned off.
	IgnoresShutdown bool `json:"ignoresShutdown,omitempty"`
	// Stops counts graceful shutdowns and TurnOffs counts forced ones
	// (useful in tests).
	Stops    int `json:"stops,omitempty"`
	TurnOffs int `json:"turnOffs,omitempty"`
}

// HyperVCheckpoint is a standard checkpoint: applying it brings the VM
// back in the state it had, running or off.
type HyperVCheckpoint struct {
	Name    string    `json:"name"`
	Parent  string    `json:"parent,omitempty"`
	Created time.Time `json:"created"`
	// State is the VM's state when the checkpoint was taken.
	State string `json:"state"`
}

// HyperVAdapter is a VM's network adapter.
type HyperVAdapter struct {
	Name      string   `json:"name"`
	MAC       string   `json:"mac"`
	Addresses []string `json:"addresses,omitempty"`
}

func (h *HyperVHost) clone() *HyperVHost {
	raw, err := json.Marshal(h)
	if err != nil {
		panic("simnode: marshal hyper-v host: " + err.Error())
	}
	var c HyperVHost
	if err := json.Unmarshal(raw, &c); err != nil {
		panic("simnode: unmarshal hyper-v host: " + err.Error())
	}
	return &c
}

// hypervHandlers answer the ops of pkg/vm/hvops.
var hypervHandlers = func() map[string]opHandler {
	m := map[string]opHandler{}
	for _, e := range []opEntry{
		handleHV(hvops.VMStatus, hvStatus),
		handleHV(hvops.VMStart, hvStart),
		handleHV(hvops.VMStop, hvStop),
		handleHV(hvops.CheckpointCreate, hvCheckpointCreate),
		handleHV(hvops.CheckpointRestore, hvCheckpointRestore),
		handleHV(hvops.CheckpointList, hvCheckpointList),
		handleHV(hvops.VMAddresses, hvAddresses),
	} {
		m[e.name] = e.fn
	}
	return m
}()

// HyperVOpNames lists the Hyper-V host ops simnode implements, sorted.
func HyperVOpNames() []string {
	var names []string
	for n := range hypervHandlers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// handleHV is handle for an hvops op.
func handleHV[Req, Resp any](op hvops.Op[Req, Resp], fn func(ctx context.Context, n *Node, req Req) (Resp, error)) opEntry {
	return opEntry{name: op.Name, fn: func(ctx context.Context, n *Node, params json.RawMessage) (any, error) {
		var req Req
		if len(params) > 0 && string(params) != "null" {
			if err := json.Unmarshal(params, &req); err != nil {
				return nil, Fail("exception", "op %s: decode parameters: %v", op.Name, err)
			}
		}
		return fn(ctx, n, req)
	}}
}

// withVM runs fn on the VM named name, under the machine's lock, with the
// failures the real ops report: no Hyper-V module, no such VM, several.
func withVM(n *Node, name string, fn func(vm *HyperVVM, now time.Time) error) error {
	return n.m.update(func(s *State, now time.Time) error {
		if s.HyperV == nil {
			return Fail(hvops.KindNoHyperV, "the Hyper-V PowerShell module is not installed on %s: install Hyper-V with its management tools (Install-WindowsFeature Hyper-V -IncludeManagementTools), or point spec.vm.hyperv.host at a Hyper-V host", s.Hostname)
		}
		var found []*HyperVVM
		for _, vm := range s.HyperV.VMs {
			if strings.EqualFold(vm.Name, name) {
				found = append(found, vm)
			}
		}
		switch len(found) {
		case 0:
			return Fail(hvops.KindVMNotFound, "no VM named %q on %s", name, s.Hostname)
		case 1:
			return fn(found[0], now)
		}
		return Fail(hvops.KindAmbiguous, "%d VMs are named %q on %s: rename all but one (Rename-VM)", len(found), name, s.Hostname)
	})
}

func vmInfo(vm *HyperVVM) hvops.VMInfo {
	return hvops.VMInfo{Name: vm.Name, State: vm.State, Checkpoints: len(vm.Checkpoints), CurrentCheckpoint: vm.Current}
}

// checkpoints returns the VM's checkpoints named name.
func checkpoints(vm *HyperVVM, name string) []*HyperVCheckpoint {
	var out []*HyperVCheckpoint
	for i := range vm.Checkpoints {
		if strings.EqualFold(vm.Checkpoints[i].Name, name) {
			out = append(out, &vm.Checkpoints[i])
		}
	}
	return out
}

func hvStatus(_ context.Context, n *Node, req hvops.VMRequest) (resp hvops.VMInfo, err error) {
	err = withVM(n, req.Name, func(vm *HyperVVM, _ time.Time) error {
		resp = vmInfo(vm)
		return nil
	})
	return resp, err
}

func hvStart(_ context.Context, n *Node, req hvops.VMRequest) (resp hvops.StartResponse, err error) {
	err = withVM(n, req.Name, func(vm *HyperVVM, _ time.Time) error {
		resp.AlreadyRunning = vm.State == "Running"
		vm.State = "Running"
		return nil
	})
	return resp, err
}

// hvStop shuts the VM down, or, for a guest that ignores it, waits the
// timeout (outside the machine's lock) and turns the VM off.
func hvStop(ctx context.Context, n *Node, req hvops.StopRequest) (resp hvops.StopResponse, err error) {
	ignores := false
	err = withVM(n, req.Name, func(vm *HyperVVM, _ time.Time) error {
		resp.AlreadyOff = vm.State == "Off"
		ignores = vm.IgnoresShutdown && !resp.AlreadyOff
		if !resp.AlreadyOff && !ignores {
			vm.State = "Off"
			vm.Stops++
		}
		return nil
	})
	if err != nil || !ignores {
		return resp, err
	}
	if err := n.Sleep(ctx, time.Duration(req.TimeoutSeconds)*time.Second); err != nil {
		return resp, err
	}
	err = withVM(n, req.Name, func(vm *HyperVVM, _ time.Time) error {
		vm.State = "Off"
		vm.TurnOffs++
		resp.Forced = true
		return nil
	})
	return resp, err
}

func hvCheckpointCreate(_ context.Context, n *Node, req hvops.CheckpointRequest) (resp hvops.Checkpoint, err error) {
	err = withVM(n, req.Name, func(vm *HyperVVM, now time.Time) error {
		if len(checkpoints(vm, req.Checkpoint)) > 0 {
			return Fail(hvops.KindCheckpointExists, "VM %q already has a checkpoint named %q", vm.Name, req.Checkpoint)
		}
		cp := HyperVCheckpoint{Name: req.Checkpoint, Parent: vm.Current, Created: now.UTC(), State: vm.State}
		vm.Checkpoints = append(vm.Checkpoints, cp)
		vm.Current = cp.Name
		resp = checkpointOf(cp)
		return nil
	})
	return resp, err
}

func checkpointOf(cp HyperVCheckpoint) hvops.Checkpoint {
	return hvops.Checkpoint{Name: cp.Name, Created: cp.Created.UTC().Format(time.RFC3339Nano), Parent: cp.Parent}
}

func hvCheckpointRestore(_ context.Context, n *Node, req hvops.CheckpointRequest) (resp hvops.VMInfo, err error) {
	err = withVM(n, req.Name, func(vm *HyperVVM, _ time.Time) error {
		found := checkpoints(vm, req.Checkpoint)
		switch len(found) {
		case 0:
			return Fail(hvops.KindCheckpointNotFound, "VM %q has no checkpoint named %q", vm.Name, req.Checkpoint)
		case 1:
		default:
			return Fail(hvops.KindAmbiguous, "%d checkpoints of VM %q are named %q: rename all but one (Rename-VMCheckpoint)", len(found), vm.Name, req.Checkpoint)
		}
		vm.State = found[0].State
		vm.Current = found[0].Name
		resp = vmInfo(vm)
		return nil
	})
	return resp, err
}

func hvCheckpointList(_ context.Context, n *Node, req hvops.VMRequest) (resp hvops.CheckpointsResponse, err error) {
	err = withVM(n, req.Name, func(vm *HyperVVM, _ time.Time) error {
		resp = hvops.CheckpointsResponse{Current: vm.Current, Checkpoints: []hvops.Checkpoint{}}
		for _, cp := range vm.Checkpoints {
			resp.Checkpoints = append(resp.Checkpoints, checkpointOf(cp))
		}
		return nil
	})
	return resp, err
}

func hvAddresses(_ context.Context, n *Node, req hvops.VMRequest) (resp hvops.AddressesResponse, err error) {
	err = withVM(n, req.Name, func(vm *HyperVVM, _ time.Time) error {
		resp.Adapters = []hvops.Adapter{}
		for _, a := range vm.Adapters {
			ad := hvops.Adapter{Name: a.Name, MAC: a.MAC, Addresses: []string{}}
			if vm.State == "Running" {
				ad.Addresses = append(ad.Addresses, a.Addresses...)
			}
			resp.Adapters = append(resp.Adapters, ad)
		}
		return nil
	})
	return resp, err
}
