// Package ops is the catalogue of PowerShell ops swdt runs on a node: one
// embedded .ps1 file per op, each starting with an "# op: NAME" header, and
// the Go request/response types of each op.
//
// The same types are used by the runner (pkg/pwsh) and by the simulator
// (pkg/simnode), so the two sides cannot drift apart. An op reads its
// request from $SwdtParams (parsed JSON) and reports with Write-SwdtResult or
// Stop-SwdtOp; it must never be built from user data.
//
// Ops run under Windows PowerShell 5.1, whose ConvertTo-Json has sharp
// edges: pass Write-SwdtResult plain [ordered] hashtables, arrays and
// scalars (never live .NET objects), wrap lists in @() so one element stays
// an array, turn enums and dates into strings yourself, and keep results
// shallow (deeper levels are silently stringified).
package ops

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.ps1
var scripts embed.FS

// Op names one op and binds its request and response types.
type Op[Req, Resp any] struct {
	// Name is the op's name, equal to its file name without .ps1 and to
	// its "# op:" header.
	Name string
}

// Script returns the embedded body of the named op.
func Script(name string) (string, error) {
	raw, err := scripts.ReadFile(name + ".ps1")
	if err != nil {
		return "", fmt.Errorf("op %q is not in the catalogue: %w", name, err)
	}
	return string(raw), nil
}

// Names lists every embedded op, sorted.
func Names() []string {
	entries, err := fs.Glob(scripts, "*.ps1")
	if err != nil {
		panic(err) // the pattern is constant and valid
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e, ".ps1"))
	}
	sort.Strings(names)
	return names
}
