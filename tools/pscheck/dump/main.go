// Command dump writes every PowerShell script swdt sends to a node, fully
// assembled, into a directory so that pscheck can parse the real bytes that
// go on the wire:
//
//   - bootstrap.ps1: the program sent with -EncodedCommand;
//   - prelude-epilogue.ps1: BuildScript around an empty op body;
//   - op-NAME.ps1: BuildScript output for each embedded op.
//
// Every script carries the same hostile sample parameters, so a quoting
// mistake in the prelude shows up as a syntax error.
//
// Usage: go run ./tools/pscheck/dump DIR
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/swdt/pkg/pwsh"
	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

// SampleParams are op parameters that would break out of a badly quoted
// prelude.
var SampleParams = map[string]any{
	"name":    "vim; Remove-Item -Recurse C:\\",
	"quote":   "'@\n$(Remove-Item C:\\) `whoami` \"; Remove-Item C:\\",
	"unicode": "Grüße ✓ 😀 \u2028",
	"list":    []string{"a"},
	"count":   1,
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dump DIR")
		os.Exit(2)
	}
	if err := Dump(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "dump:", err)
		os.Exit(1)
	}
}

// Dump writes the scripts into dir, creating it if needed.
func Dump(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string][]byte{"bootstrap.ps1": []byte(pwsh.Bootstrap())}
	sample, err := pwsh.BuildScript("sample", "", SampleParams)
	if err != nil {
		return fmt.Errorf("build prelude sample: %w", err)
	}
	files["prelude-epilogue.ps1"] = sample
	for _, name := range ops.Names() {
		body, err := ops.Script(name)
		if err != nil {
			return err
		}
		script, err := pwsh.BuildScript(name, body, SampleParams)
		if err != nil {
			return fmt.Errorf("build op %s: %w", name, err)
		}
		files["op-"+name+".ps1"] = script
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
