// Package simnode is a simulated Windows Server 2022 node: an SSH server
// with an SFTP subsystem and an exec handler that runs swdt-agent's op
// handlers (pkg/agent) in-process, once swdt has uploaded the agent, over
// a simulated Windows layer (Node.OS, implementing winos.OS) backed by a
// persistent state model of services, processes, named pipes, registry
// values, firewall rules, Chocolatey and a sandboxed NTFS-like file system.
//
// It exists so that every swdt workflow can be tested end to end, demonstrated
// and benchmarked without a Windows machine, with the same op logic that runs
// on Windows. It is a simulator: it must never run anything it is asked to
// run, never touch files outside its state directory, and hold no op logic
// of its own (that lives in pkg/agent only); what it simulates is Windows
// and the programs swdt drives (wins.exe, choco.exe, hostname.exe).
package simnode
