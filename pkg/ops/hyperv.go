package ops

// Ops of a Hyper-V host (`swdt vm` and spec.vm with provider hyperv). The
// host is a Windows machine swdt reaches like a node; each op runs one
// fixed PowerShell script of pkg/winos (Hyper-V has no API swdt calls
// from Go) with the request, VM and checkpoint names included, as JSON
// data on the script's stdin.
var (
	// HyperVVMStatus reports a VM's state, how many checkpoints it has
	// and which one its state descends from.
	HyperVVMStatus = register[HyperVVMRequest, HyperVVMInfo]("hyperv-vm-status")
	// HyperVVMStart starts a VM that is off or saved, resumes a paused
	// one and leaves a running one alone.
	HyperVVMStart = register[HyperVVMRequest, HyperVStartResponse]("hyperv-vm-start")
	// HyperVVMStop shuts a VM down through the guest and turns it off
	// when it is not off within the request's timeout.
	HyperVVMStop = register[HyperVStopRequest, HyperVStopResponse]("hyperv-vm-stop")
	// HyperVCheckpointCreate takes a checkpoint under a name no other
	// checkpoint of the VM has.
	HyperVCheckpointCreate = register[HyperVCheckpointRequest, HyperVCheckpoint]("hyperv-checkpoint-create")
	// HyperVCheckpointRestore applies a checkpoint and reports the VM
	// afterwards.
	HyperVCheckpointRestore = register[HyperVCheckpointRequest, HyperVVMInfo]("hyperv-checkpoint-restore")
	// HyperVCheckpointList lists a VM's checkpoints, oldest first.
	HyperVCheckpointList = register[HyperVVMRequest, HyperVCheckpointsResponse]("hyperv-checkpoint-list")
	// HyperVVMAddresses lists a VM's network adapters with the addresses
	// the guest reports.
	HyperVVMAddresses = register[HyperVVMRequest, HyperVAddressesResponse]("hyperv-vm-addresses")
)

// Error kinds of the Hyper-V ops (besides the agent's own, such as
// "timeout" and "exception").
const (
	// KindNoHyperV: the host has no Hyper-V PowerShell module.
	KindNoHyperV Kind = "no-hyperv"
	// KindVMNotFound: no VM has the name.
	KindVMNotFound Kind = "vm-not-found"
	// KindCheckpointNotFound: the VM has no checkpoint of the name.
	KindCheckpointNotFound Kind = "checkpoint-not-found"
	// KindCheckpointExists: the VM already has a checkpoint of the name.
	KindCheckpointExists Kind = "checkpoint-exists"
	// KindAmbiguous: several VMs or checkpoints have the name.
	KindAmbiguous Kind = "ambiguous"
)

// HyperVVMRequest names a VM. Names are compared case-insensitively and
// literally (never as wildcards).
type HyperVVMRequest struct {
	Name string `json:"name"`
}

// HyperVVMInfo is a VM as Get-VM shows it.
type HyperVVMInfo struct {
	Name string `json:"name"`
	// State is Hyper-V's VMState as text: Running, Off, Saved, Paused,
	// Starting, Stopping, ...
	State string `json:"state"`
	// Checkpoints counts the VM's checkpoints.
	Checkpoints int `json:"checkpoints"`
	// CurrentCheckpoint is the checkpoint the VM's state descends from
	// (ParentSnapshotName), empty when none.
	CurrentCheckpoint string `json:"currentCheckpoint"`
}

// HyperVStartResponse is the outcome of a start.
type HyperVStartResponse struct {
	AlreadyRunning bool `json:"alreadyRunning"`
}

// HyperVStopRequest asks for a shutdown, forced after TimeoutSeconds.
type HyperVStopRequest struct {
	Name           string `json:"name"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
}

// HyperVStopResponse is the outcome of a stop.
type HyperVStopResponse struct {
	Forced     bool `json:"forced"`
	AlreadyOff bool `json:"alreadyOff"`
}

// HyperVCheckpointRequest names a VM and one of its checkpoints.
type HyperVCheckpointRequest struct {
	Name       string `json:"name"`
	Checkpoint string `json:"checkpoint"`
}

// HyperVCheckpoint is one checkpoint of a VM.
type HyperVCheckpoint struct {
	Name string `json:"name"`
	// Created is the creation time, UTC, in round-trip format (ISO 8601).
	Created string `json:"created"`
	// Parent is the checkpoint this one was taken on top of.
	Parent string `json:"parent"`
}

// HyperVCheckpointsResponse is a VM's checkpoints, oldest first.
type HyperVCheckpointsResponse struct {
	// Current is the checkpoint the VM's state descends from.
	Current     string             `json:"current"`
	Checkpoints []HyperVCheckpoint `json:"checkpoints"`
}

// HyperVAdapter is one network adapter of a VM.
type HyperVAdapter struct {
	Name      string   `json:"name"`
	MAC       string   `json:"mac"`
	Addresses []string `json:"addresses"`
}

// HyperVAddressesResponse lists a VM's network adapters.
type HyperVAddressesResponse struct {
	Adapters []HyperVAdapter `json:"adapters"`
}
