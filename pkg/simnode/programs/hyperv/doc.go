// Package hyperv plays a Hyper-V host: the fixed hyperv-*.ps1 scripts of
// pkg/winos (VM status, start, stop with or without the guest's shutdown
// integration, checkpoints, addresses) against the machine's HyperVHost
// model, printing the one JSON line each script prints.
//
// It must never talk to a real hypervisor, and changes the machine only
// through machine.Node's methods.
package hyperv
