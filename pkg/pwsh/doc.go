// Package pwsh runs PowerShell ops on a Windows node over an SSH exec
// channel, following the protocol of DESIGN.md §3.1: a fixed bootstrap sent
// with -EncodedCommand, the op script written to stdin with its parameters as
// JSON, and one result envelope read back behind ResultMarker.
//
// It must never splice user data into PowerShell source: parameters travel
// only as JSON inside the prelude's single-quoted here-string.
package pwsh
