// Package hvops is the catalogue of PowerShell ops swdt runs on a Hyper-V
// host: one embedded hyperv-*.ps1 file per op, each run after the shared
// common.ps1 (the Hyper-V module check and the lookups by name), and the Go
// request and response types of each op.
//
// The ops run through pkg/pwsh's protocol (DESIGN.md §3.1): the VM and
// checkpoint names travel only as JSON data, never in script text. The same
// types are used by pkg/vm and by the simulated Hyper-V host in
// pkg/simnode, so the two sides cannot drift apart.
package hvops

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed common.ps1 hyperv-*.ps1
var scripts embed.FS

// Op names one op and binds its request and response types.
type Op[Req, Resp any] struct {
	// Name is the op's name, equal to its file name without .ps1 and to
	// its "# op:" header.
	Name string
}

// The ops.
var (
	VMStatus          = Op[VMRequest, VMInfo]{Name: "hyperv-vm-status"}
	VMStart           = Op[VMRequest, StartResponse]{Name: "hyperv-vm-start"}
	VMStop            = Op[StopRequest, StopResponse]{Name: "hyperv-vm-stop"}
	CheckpointCreate  = Op[CheckpointRequest, Checkpoint]{Name: "hyperv-checkpoint-create"}
	CheckpointRestore = Op[CheckpointRequest, VMInfo]{Name: "hyperv-checkpoint-restore"}
	CheckpointList    = Op[VMRequest, CheckpointsResponse]{Name: "hyperv-checkpoint-list"}
	VMAddresses       = Op[VMRequest, AddressesResponse]{Name: "hyperv-vm-addresses"}
)

// Error kinds the ops report (pwsh.OpError.Kind).
const (
	// KindNoHyperV: the host has no Hyper-V PowerShell module.
	KindNoHyperV = "no-hyperv"
	// KindVMNotFound: no VM has the name.
	KindVMNotFound = "vm-not-found"
	// KindCheckpointNotFound: the VM has no checkpoint of the name.
	KindCheckpointNotFound = "checkpoint-not-found"
	// KindCheckpointExists: the VM already has a checkpoint of the name.
	KindCheckpointExists = "checkpoint-exists"
	// KindAmbiguous: several VMs or checkpoints have the name.
	KindAmbiguous = "ambiguous"
)

// VMRequest names a VM.
type VMRequest struct {
	Name string `json:"name"`
}

// VMInfo is a VM as Get-VM shows it.
type VMInfo struct {
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

// StartResponse is the outcome of a start.
type StartResponse struct {
	AlreadyRunning bool `json:"alreadyRunning"`
}

// StopRequest asks for a shutdown, forced after TimeoutSeconds.
type StopRequest struct {
	Name           string `json:"name"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
}

// StopResponse is the outcome of a stop.
type StopResponse struct {
	Forced     bool `json:"forced"`
	AlreadyOff bool `json:"alreadyOff"`
}

// CheckpointRequest names a VM and one of its checkpoints.
type CheckpointRequest struct {
	Name       string `json:"name"`
	Checkpoint string `json:"checkpoint"`
}

// Checkpoint is one checkpoint of a VM.
type Checkpoint struct {
	Name string `json:"name"`
	// Created is the creation time, UTC, in round-trip format (ISO 8601).
	Created string `json:"created"`
	// Parent is the checkpoint this one was taken on top of.
	Parent string `json:"parent"`
}

// CheckpointsResponse is a VM's checkpoints, oldest first.
type CheckpointsResponse struct {
	// Current is the checkpoint the VM's state descends from.
	Current     string       `json:"current"`
	Checkpoints []Checkpoint `json:"checkpoints"`
}

// Adapter is one network adapter of a VM.
type Adapter struct {
	Name      string   `json:"name"`
	MAC       string   `json:"mac"`
	Addresses []string `json:"addresses"`
}

// AddressesResponse lists a VM's network adapters.
type AddressesResponse struct {
	Adapters []Adapter `json:"adapters"`
}

// Script returns what runs for the named op: common.ps1, then the op.
func Script(name string) (string, error) {
	common, err := scripts.ReadFile("common.ps1")
	if err != nil {
		return "", fmt.Errorf("hyper-v op catalogue: %w", err)
	}
	body, err := scripts.ReadFile(name + ".ps1")
	if err != nil || !strings.HasPrefix(name, "hyperv-") {
		return "", fmt.Errorf("hyper-v op %q is not in the catalogue", name)
	}
	return string(common) + string(body), nil
}

// Names lists every embedded op, sorted.
func Names() []string {
	entries, err := fs.Glob(scripts, "hyperv-*.ps1")
	if err != nil {
		panic(err) // the pattern is constant and valid
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e, ".ps1"))
	}
	sort.Strings(names)
	return names
}
