package machine

import (
	"encoding/json"
	"time"
)

// HyperVHost is the Hyper-V part of a machine that plays a Hyper-V host:
// its VMs, which the simulated Hyper-V scripts (programs_hyperv.go) read
// and change. A machine without it has no Hyper-V PowerShell module.
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

// UpdateHyperV changes the Hyper-V host's part of the state (nil when the
// machine is no Hyper-V host) and saves it; fn's error is returned.
func (n *Node) UpdateHyperV(fn func(h *HyperVHost, now time.Time) error) error {
	return n.m.update(func(s *State, now time.Time) error { return fn(s.HyperV, now) })
}
