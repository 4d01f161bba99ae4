// Package simnode is a simulated Windows Server 2022 node: an SSH server
// with an SFTP subsystem and an exec handler that runs swdt-agent's op
// handlers (pkg/agent) in-process, once swdt has uploaded the agent, over
// a simulated Windows layer (Node.OS, implementing winos.OS) backed by a
// persistent model of services, processes, named pipes, registry values,
// firewall rules, Chocolatey and a sandboxed NTFS-like file system.
//
// It exists so that every swdt workflow can be tested end to end, demonstrated
// and benchmarked without a Windows machine, with the same op logic that runs
// on Windows. It is a simulator: it must never run anything it is asked to
// run, never touch files outside its state directory, and hold no op logic
// of its own (that lives in pkg/agent only); what it simulates is Windows
// and the programs swdt drives (wins.exe, choco.exe, hostname.exe).
//
// This package is the façade: StartTest and TestServer for tests, and the
// names of the packages below it, by what they simulate:
//
//   - machine: the Windows machine model, its state and persistence;
//   - simos: winos.OS over the model (Win32 errors, scripts, mutexes, agents);
//   - front: the SSH, SFTP, exec, shell and forwarding server;
//   - programs (wins, choco, hyperv): the programs swdt drives;
//   - kubelet: a kubelet that speaks the real Kubernetes API;
//   - wine: the Wine mode, which runs the real agent instead.
//
// It must hold no simulation of its own.
package simnode
