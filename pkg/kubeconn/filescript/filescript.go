// Package filescript is the file protocol of the Kubernetes API transport
// (pkg/kubeconn): before swdt-agent is on a node, and to deliver it, the
// transport reaches the node's files through one fixed PowerShell script
// run through pods/exec, as the SSH transport reaches them through SFTP.
// The request travels as one JSON line on stdin (a write's bytes follow
// it) and the reply as one JSON line on stdout (a read's bytes follow
// it); no path is ever on a command line.
//
// It holds only the script, its command line and the wire types, so that
// simnode can play the script without importing the transport.
package filescript

import (
	_ "embed"
	"encoding/base64"
	"slices"
	"unicode/utf16"
)

//go:embed files.ps1
var script string

// The file calls (Request.Op).
const (
	OpStat    = "stat"
	OpReadDir = "readdir"
	OpRemove  = "remove"
	OpMkdir   = "mkdir"
	OpWrite   = "write"
	OpRead    = "read"
)

// Error kinds of a Reply (the names of pkg/ops's kinds).
const (
	KindNotFound     = "not-found"
	KindAccessDenied = "access-denied"
	KindBadRequest   = "bad-request"
	KindIO           = "io"
)

// Request is one file call.
type Request struct {
	// Op is one of the Op constants.
	Op string `json:"op"`
	// Path is the Windows path the call is about; a write creates or
	// truncates it.
	Path string `json:"path"`
	// To, for a write, is where the file is renamed once written whole
	// (replacing a file there): an upload through a staged name.
	To string `json:"to,omitempty"`
	// Offset, for a read, is where the bytes after the reply start (a
	// read cut short is read again from there).
	Offset int64 `json:"offset,omitempty"`
}

// Entry describes a file or directory.
type Entry struct {
	Name string `json:"name"`
	Dir  bool   `json:"dir"`
	Size int64  `json:"size"`
	// Mod is the last-write time in Unix nanoseconds (100 ns steps).
	Mod int64 `json:"mod"`
}

// Reply is the script's one line: OK with the entries a stat, readdir or
// read describes, or the error's kind and message.
type Reply struct {
	OK      bool    `json:"ok"`
	Kind    string  `json:"kind,omitempty"`
	Message string  `json:"message,omitempty"`
	Entries []Entry `json:"entries,omitempty"`
}

// Argv is the command the script runs as: powershell.exe with the script
// encoded, the same for every call.
func Argv() []string {
	u := utf16.Encode([]rune(script))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		b[2*i], b[2*i+1] = byte(c), byte(c>>8)
	}
	return []string{"powershell.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass",
		"-EncodedCommand", base64.StdEncoding.EncodeToString(b)}
}

// IsArgv reports whether argv runs the script.
func IsArgv(argv []string) bool { return slices.Equal(argv, Argv()) }

// Script is the script's text.
func Script() string { return script }
