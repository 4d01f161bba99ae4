// Package programs plays the programs a simulated node runs: Windows'
// small ones (hostname.exe, whoami.exe, cmd.exe /c, sc.exe delete,
// timeout.exe, shutdown.exe /r) and, each behind the Program interface,
// rancher/wins (package wins), Chocolatey (package choco) and the Hyper-V
// host's scripts (package hyperv). Run and Play find the program a
// command names, as CreateProcess would, and answer it from the model.
//
// A program never runs: it must change the machine only through
// machine.Node's methods, never through its state structs, and must not
// know the SSH front or the Windows layer that calls it.
package programs
