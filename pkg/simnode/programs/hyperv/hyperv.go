package hyperv

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The Hyper-V scripts of pkg/winos (hyperv-*.ps1), played against the
// machine's HyperVHost model: what the scripts' cmdlets would do to the
// VMs, and the one JSON line the scripts print, {"data": ...} or, with
// exit code 1, {"error": {"kind", "message"}}.

// Program is the simulated Hyper-V host: its fixed scripts (the
// hyperv-*.ps1 of pkg/winos) played against the state's Hyper-V part.
type Program struct{}

// Claims reports false: the Hyper-V host has no program swdt runs.
func (Program) Claims(string, []string) bool { return false }

// Run is never called (Claims is false).
func (Program) Run(context.Context, *machine.Node, string, []string, []byte) (winos.Result, error) {
	return winos.Result{}, errors.New("simnode: the Hyper-V host runs no program")
}

// Script returns the play of a Hyper-V script, nil for any other.
func (Program) Script(name string) func(ctx context.Context, n *machine.Node, input []byte) (winos.Result, error) {
	return scripts[name]
}

// scriptPlay plays one fixed PowerShell script with its input.
type scriptPlay = func(ctx context.Context, n *machine.Node, input []byte) (winos.Result, error)

// scripts play the Hyper-V scripts by name.
var scripts = map[string]scriptPlay{
	winos.ScriptHyperVVMStatus.Name():          playHyperV(hvStatus),
	winos.ScriptHyperVVMStart.Name():           playHyperV(hvStart),
	winos.ScriptHyperVVMStop.Name():            playHyperV(hvStop),
	winos.ScriptHyperVCheckpointCreate.Name():  playHyperV(hvCheckpointCreate),
	winos.ScriptHyperVCheckpointRestore.Name(): playHyperV(hvCheckpointRestore),
	winos.ScriptHyperVCheckpointList.Name():    playHyperV(hvCheckpointList),
	winos.ScriptHyperVVMAddresses.Name():       playHyperV(hvAddresses),
}

// playHyperV plays one Hyper-V script: it reads the request as the
// script's prelude does and prints the script's result line. A failure
// the script names (an *OpFailure) is printed as the prelude's trap
// prints it; any other error (the context ended: the script was killed)
// is returned.
func playHyperV[Req, Resp any](play func(ctx context.Context, n *machine.Node, req Req) (Resp, error)) scriptPlay {
	return func(ctx context.Context, n *machine.Node, input []byte) (winos.Result, error) {
		var req Req
		var (
			data Resp
			err  error
		)
		if jerr := json.Unmarshal(input, &req); jerr != nil {
			err = machine.Fail(ops.KindException, "ConvertFrom-Json : Invalid JSON primitive: %v", jerr)
		} else {
			data, err = play(ctx, n, req)
		}
		var f *machine.OpFailure
		switch {
		case err == nil:
			raw, merr := json.Marshal(map[string]any{"data": data})
			if merr != nil {
				return winos.Result{}, merr
			}
			return winos.Result{Stdout: append(raw, '\r', '\n')}, nil
		case errors.As(err, &f):
			raw, merr := json.Marshal(map[string]any{"error": ops.EnvelopeError{Kind: f.Kind, Message: f.Message}})
			if merr != nil {
				return winos.Result{}, merr
			}
			return winos.Result{ExitCode: 1, Stdout: append(raw, '\r', '\n')}, nil
		}
		return winos.Result{}, err
	}
}

// withVM runs fn on the VM named name, under the machine's lock, with the
// failures the scripts' prelude reports: no Hyper-V module, no such VM,
// several. Names are compared case-insensitively and literally, as -eq
// does.
func withVM(n *machine.Node, name string, fn func(vm *machine.HyperVVM, now time.Time) error) error {
	hostname := n.Hostname()
	return n.UpdateHyperV(func(h *machine.HyperVHost, now time.Time) error {
		if h == nil {
			return machine.Fail(ops.KindNoHyperV, "the Hyper-V PowerShell module is not installed on %s: install Hyper-V with its management tools (Install-WindowsFeature Hyper-V -IncludeManagementTools), or point spec.vm.hyperv.host at a Hyper-V host", hostname)
		}
		var found []*machine.HyperVVM
		for _, vm := range h.VMs {
			if strings.EqualFold(vm.Name, name) {
				found = append(found, vm)
			}
		}
		switch len(found) {
		case 0:
			return machine.Fail(ops.KindVMNotFound, "no VM named %q on %s", name, hostname)
		case 1:
			return fn(found[0], now)
		}
		return machine.Fail(ops.KindAmbiguous, "%d VMs are named %q on %s: rename all but one (Rename-VM)", len(found), name, hostname)
	})
}

// vmInfo is ConvertTo-SwdtVMInfo.
func vmInfo(vm *machine.HyperVVM) ops.HyperVVMInfo {
	return ops.HyperVVMInfo{Name: vm.Name, State: vm.State, Checkpoints: len(vm.Checkpoints), CurrentCheckpoint: vm.Current}
}

// checkpoints is Get-SwdtCheckpoint: the VM's checkpoints named name.
func checkpoints(vm *machine.HyperVVM, name string) []*machine.HyperVCheckpoint {
	var out []*machine.HyperVCheckpoint
	for i := range vm.Checkpoints {
		if strings.EqualFold(vm.Checkpoints[i].Name, name) {
			out = append(out, &vm.Checkpoints[i])
		}
	}
	return out
}

// checkpointOf is ConvertTo-SwdtCheckpoint.
func checkpointOf(cp machine.HyperVCheckpoint) ops.HyperVCheckpoint {
	return ops.HyperVCheckpoint{Name: cp.Name, Created: cp.Created.UTC().Format(time.RFC3339Nano), Parent: cp.Parent}
}

// hvStatus plays hyperv-vm-status.ps1.
func hvStatus(_ context.Context, n *machine.Node, req ops.HyperVVMRequest) (resp ops.HyperVVMInfo, err error) {
	err = withVM(n, req.Name, func(vm *machine.HyperVVM, _ time.Time) error {
		resp = vmInfo(vm)
		return nil
	})
	return resp, err
}

// hvStart plays hyperv-vm-start.ps1: Start-VM, or Resume-VM for a paused
// VM; a running one is left alone.
func hvStart(_ context.Context, n *machine.Node, req ops.HyperVVMRequest) (resp ops.HyperVStartResponse, err error) {
	err = withVM(n, req.Name, func(vm *machine.HyperVVM, _ time.Time) error {
		resp.AlreadyRunning = vm.State == "Running"
		vm.State = "Running"
		return nil
	})
	return resp, err
}

// hvStop plays hyperv-vm-stop.ps1: Stop-VM shuts the guest down, or, for
// a guest that ignores it, Wait-Job waits the whole timeout (outside the
// machine's lock) and Stop-VM -TurnOff turns the VM off.
func hvStop(ctx context.Context, n *machine.Node, req ops.HyperVStopRequest) (resp ops.HyperVStopResponse, err error) {
	ignores := false
	err = withVM(n, req.Name, func(vm *machine.HyperVVM, _ time.Time) error {
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
	err = withVM(n, req.Name, func(vm *machine.HyperVVM, _ time.Time) error {
		vm.State = "Off"
		vm.TurnOffs++
		resp.Forced = true
		return nil
	})
	return resp, err
}

// hvCheckpointCreate plays hyperv-checkpoint-create.ps1: Checkpoint-VM
// under a name the VM's checkpoints do not have yet.
func hvCheckpointCreate(_ context.Context, n *machine.Node, req ops.HyperVCheckpointRequest) (resp ops.HyperVCheckpoint, err error) {
	err = withVM(n, req.Name, func(vm *machine.HyperVVM, now time.Time) error {
		if len(checkpoints(vm, req.Checkpoint)) > 0 {
			return machine.Fail(ops.KindCheckpointExists, "VM %q already has a checkpoint named %q", vm.Name, req.Checkpoint)
		}
		cp := machine.HyperVCheckpoint{Name: req.Checkpoint, Parent: vm.Current, Created: now.UTC(), State: vm.State}
		vm.Checkpoints = append(vm.Checkpoints, cp)
		vm.Current = cp.Name
		resp = checkpointOf(cp)
		return nil
	})
	return resp, err
}

// hvCheckpointRestore plays hyperv-checkpoint-restore.ps1:
// Restore-VMCheckpoint of the one checkpoint of that name brings back the
// state it was taken in.
func hvCheckpointRestore(_ context.Context, n *machine.Node, req ops.HyperVCheckpointRequest) (resp ops.HyperVVMInfo, err error) {
	err = withVM(n, req.Name, func(vm *machine.HyperVVM, _ time.Time) error {
		found := checkpoints(vm, req.Checkpoint)
		switch len(found) {
		case 0:
			return machine.Fail(ops.KindCheckpointNotFound, "VM %q has no checkpoint named %q", vm.Name, req.Checkpoint)
		case 1:
		default:
			return machine.Fail(ops.KindAmbiguous, "%d checkpoints of VM %q are named %q: rename all but one (Rename-VMCheckpoint)", len(found), vm.Name, req.Checkpoint)
		}
		vm.State = found[0].State
		vm.Current = found[0].Name
		resp = vmInfo(vm)
		return nil
	})
	return resp, err
}

// hvCheckpointList plays hyperv-checkpoint-list.ps1: the checkpoints in
// the order they were taken.
func hvCheckpointList(_ context.Context, n *machine.Node, req ops.HyperVVMRequest) (resp ops.HyperVCheckpointsResponse, err error) {
	err = withVM(n, req.Name, func(vm *machine.HyperVVM, _ time.Time) error {
		resp = ops.HyperVCheckpointsResponse{Current: vm.Current, Checkpoints: []ops.HyperVCheckpoint{}}
		for _, cp := range vm.Checkpoints {
			resp.Checkpoints = append(resp.Checkpoints, checkpointOf(cp))
		}
		return nil
	})
	return resp, err
}

// hvAddresses plays hyperv-vm-addresses.ps1: each adapter, with the
// addresses the guest's integration services report while it runs.
func hvAddresses(_ context.Context, n *machine.Node, req ops.HyperVVMRequest) (resp ops.HyperVAddressesResponse, err error) {
	err = withVM(n, req.Name, func(vm *machine.HyperVVM, _ time.Time) error {
		resp.Adapters = []ops.HyperVAdapter{}
		for _, a := range vm.Adapters {
			ad := ops.HyperVAdapter{Name: a.Name, MAC: a.MAC, Addresses: []string{}}
			if vm.State == "Running" {
				ad.Addresses = append(ad.Addresses, a.Addresses...)
			}
			resp.Adapters = append(resp.Adapters, ad)
		}
		return nil
	})
	return resp, err
}
