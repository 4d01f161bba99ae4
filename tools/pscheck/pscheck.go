// Package pscheck checks, without Windows, that every PowerShell script swdt
// sends to a node parses under a real PowerShell grammar (DESIGN.md §7).
//
// The grammar check itself is check.mjs (Node.js, web-tree-sitter and the
// tree-sitter-powershell grammar, pinned by package-lock.json). This package
// writes the scripts to check: Dump assembles them exactly as they go on
// the wire, and `go run ./tools/pscheck/dump DIR` exposes it to make.
package pscheck

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/swdt/pkg/pwsh"
	"sigs.k8s.io/swdt/pkg/pwsh/ops"
	"sigs.k8s.io/swdt/pkg/vm/hvops"
)

// SampleParams are op parameters that would break out of a badly quoted
// prelude. Every dumped script carries them.
var SampleParams = map[string]any{
	"name":    "vim; Remove-Item -Recurse C:\\",
	"quote":   "'@\n$(Remove-Item C:\\) `whoami` \"; Remove-Item C:\\",
	"unicode": "Grüße ✓ 😀 \u2028",
	"list":    []string{"a"},
	"count":   1,
}

// Dump writes into dir (created if needed):
//
//   - bootstrap.ps1: the program sent with -EncodedCommand;
//   - prelude-epilogue.ps1: BuildScript around an empty op body;
//   - op-NAME.ps1: BuildScript output for each embedded op;
//   - op-hyperv-*.ps1: the same for each Hyper-V host op (pkg/vm/hvops).
//
// It returns the names of the files written.
func Dump(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create dump dir: %w", err)
	}
	type file struct {
		name string
		data []byte
	}
	files := []file{{"bootstrap.ps1", []byte(pwsh.Bootstrap())}}
	sample, err := pwsh.BuildScript("sample", "", SampleParams)
	if err != nil {
		return nil, fmt.Errorf("build prelude sample: %w", err)
	}
	files = append(files, file{"prelude-epilogue.ps1", sample})
	for _, name := range ops.Names() {
		body, err := ops.Script(name)
		if err != nil {
			return nil, err
		}
		script, err := pwsh.BuildScript(name, body, SampleParams)
		if err != nil {
			return nil, fmt.Errorf("build op %s: %w", name, err)
		}
		files = append(files, file{"op-" + name + ".ps1", script})
	}
	for _, name := range hvops.Names() {
		body, err := hvops.Script(name)
		if err != nil {
			return nil, err
		}
		script, err := pwsh.BuildScript(name, body, SampleParams)
		if err != nil {
			return nil, fmt.Errorf("build hyper-v op %s: %w", name, err)
		}
		files = append(files, file{"op-" + name + ".ps1", script})
	}
	names := make([]string, 0, len(files))
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", f.name, err)
		}
		names = append(names, f.name)
	}
	return names, nil
}
