// Package simos is the simulated machine's Win32 face: an implementation
// of winos.OS (Node.OS) over package machine, as pkg/agent's handlers
// see Windows inside simnode. It turns the model's errors into the Win32
// codes the real layer reports, plays the fixed PowerShell scripts that
// read Windows itself (language mode, firewall, event log) and refuses
// scripts as Constrained Language mode does, takes Win32 calls away as
// Wine and hardened images do (Faults.MissingAPIs), keeps the named
// mutexes, and follows each agent's life: an agent outlives its SSH
// session, as under OpenSSH for Windows, unless it is killed (a signal
// request, the AgentHold fault).
//
// It must never reach into the model's state (only machine.Node's
// methods), never hold op logic (the handlers are pkg/agent's), and never
// run a program: programs are played by package programs.
package simos
