// Package choco plays Chocolatey: choco.exe (--version; list with v1's
// and v2's differences; install with the real exit codes) and the
// community install script (choco-install.ps1: its download, .NET 4.8
// and the reboot it requires, the administrator check), over the
// Chocolatey part of the machine's state.
//
// It must never download or run anything, and changes the machine only
// through machine.Node's methods.
package choco
