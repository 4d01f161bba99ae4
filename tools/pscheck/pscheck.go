// Package pscheck checks, without Windows, that every PowerShell script swdt
// may run on a node parses under a real PowerShell grammar (DESIGN.md §7).
// Since the agent replaced the op scripts, those are the few fixed scripts
// of pkg/winos (Chocolatey's installer, firewall rules by name, the event
// log, the language mode, and the Hyper-V host ops, each with its shared
// prelude), run as they are with their input on stdin, and the file script
// of the Kubernetes API transport (pkg/kubeconn/filescript).
//
// The grammar check itself is check.mjs (Node.js, web-tree-sitter and the
// tree-sitter-powershell grammar, pinned by package-lock.json). Dump writes
// the scripts to check, and `go run ./tools/pscheck/dump DIR` exposes it to
// make.
package pscheck

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/swdt/pkg/kubeconn/filescript"
	"sigs.k8s.io/swdt/pkg/winos"
)

// Dump writes script-NAME.ps1 for each fixed script of pkg/winos, and
// script-kubeconn-files.ps1, into dir (created if needed) and returns the
// names of the files written.
func Dump(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create dump dir: %w", err)
	}
	var names []string
	for _, s := range winos.Scripts() {
		name := "script-" + s.Name() + ".ps1"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s.Source()), 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
		names = append(names, name)
	}
	const files = "script-kubeconn-files.ps1"
	if err := os.WriteFile(filepath.Join(dir, files), []byte(filescript.Script()), 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", files, err)
	}
	return append(names, files), nil
}
