// Package machine is the model of a Windows Server 2022 machine that simnode
// simulates: its state (services and the service control manager's rules,
// processes and the images they lock, named pipes and listening ports, the
// C: drive (package ntfs: files, owners and DACLs), accounts and their
// profiles, registry values, firewall rules, Chocolatey's package database,
// the Hyper-V host's VMs, reboots, PowerShell's language mode), the faults a
// test injects, and their persistence in a state directory (state.json,
// faults.json, fs/).
//
// Its API is Open (a Machine, what sshd and the simulated programs share)
// and Node (the machine as one account sees it). Every change goes
// through a Node method, applies Windows' rules and is saved at once;
// time-driven transitions (pending states ending, crashes, restarts) are
// applied lazily from timestamps.
//
// It must never import the SSH front (package front), the Windows layer
// over it (package simos) or the simulated programs; never run a program
// it is asked to run; never touch a file outside its state directory;
// and hold no op logic (that is pkg/agent's). The programs that run while
// a service process lives (the kubelet) plug in as a Daemon.
package machine
