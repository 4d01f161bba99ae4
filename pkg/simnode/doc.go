// Package simnode is a simulated Windows Server 2022 node: an SSH server
// with an SFTP subsystem and an exec handler that speaks swdt's PowerShell op
// protocol (DESIGN.md §3.1), backed by a persistent state model of services,
// processes, named pipes, registry values, firewall rules, Chocolatey and a
// sandboxed NTFS-like file system.
//
// It exists so that every swdt workflow can be tested end to end, demonstrated
// and benchmarked without a Windows machine. It is a simulator: it must never
// run anything it is asked to run, and never touch files outside its state
// directory.
//
// Op handlers (one Go function per embedded .ps1 op) are listed in opTable
// (ops.go); each receives a *Node, the view of the machine from one SSH
// session, whose methods apply Windows' rules (file locks, service control
// manager behaviour) and persist every change.
package simnode
