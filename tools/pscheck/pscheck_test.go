package pscheck

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// runCheck runs check.mjs on args. It skips the test when node or the npm
// packages are missing, except in CI (CI=true), where it fails.
func runCheck(t *testing.T, args ...string) (string, int) {
	t.Helper()
	unavailable := func(reason string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf("pscheck cannot run in CI: %s", reason)
		}
		t.Skipf("pscheck not run: %s", reason)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node is not installed")
	}
	for _, pkg := range []string{"web-tree-sitter", "tree-sitter-powershell"} {
		if _, err := os.Stat(filepath.Join("node_modules", pkg, "package.json")); err != nil {
			unavailable("node_modules/" + pkg + " is missing; run `npm ci` in tools/pscheck (or `make pscheck`)")
		}
	}
	cmd := exec.Command(node, append([]string{"check.mjs"}, args...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		t.Fatalf("run node: %v\n%s", err, out)
		return "", -1
	}
}

func TestEmbeddedScriptsParse(t *testing.T) {
	dir := t.TempDir()
	names, err := Dump(dir)
	if err != nil {
		t.Fatal(err)
	}
	out, code := runCheck(t, dir)
	if code != 0 {
		t.Fatalf("pscheck failed on the scripts swdt sends (exit %d):\n%s", code, out)
	}
	if want := strconv.Itoa(len(names)) + " passed, 0 failed"; !strings.Contains(out, want) {
		t.Errorf("pscheck output %q lacks %q", out, want)
	}
}

func TestBrokenScriptFails(t *testing.T) {
	dir := t.TempDir()
	// A script like the fixed ones whose fourth line misses a closing
	// parenthesis: the error names that line.
	script := []byte("$ErrorActionPreference = 'Stop'\n$reader = New-Object System.IO.StreamReader([Console]::OpenStandardInput())\n$x = 1\nif ($x -eq 1 {\n    'yes'\n}\n")
	broken := filepath.Join(dir, "script-broken.ps1")
	if err := os.WriteFile(broken, script, 0o644); err != nil {
		t.Fatal(err)
	}
	wantLine := 0
	for i, l := range strings.Split(string(script), "\n") {
		if strings.HasPrefix(l, "if ($x -eq 1 {") {
			wantLine = i + 1
		}
	}
	if _, err := Dump(dir); err != nil { // good scripts next to it still pass
		t.Fatal(err)
	}

	out, code := runCheck(t, dir)
	if code != 1 {
		t.Fatalf("pscheck exit status %d on a broken script, want 1:\n%s", code, out)
	}
	m := regexp.MustCompile(`(?m)^(\S*script-broken\.ps1):(\d+):(\d+): syntax error near "(.*)"$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("pscheck output lacks file:line:column: syntax error near ...:\n%s", out)
	}
	if line, _ := strconv.Atoi(m[2]); line != wantLine {
		t.Errorf("reported line %d, want %d (the broken if):\n%s", line, wantLine, out)
	}
	if !strings.Contains(out, " passed, 1 failed") {
		t.Errorf("summary missing or wrong:\n%s", out)
	}
	if strings.Count(out, "syntax error") != 1 {
		t.Errorf("only the broken script should fail:\n%s", out)
	}
}

func TestUsage(t *testing.T) {
	out, code := runCheck(t)
	if code != 2 || !strings.Contains(out, "usage:") {
		t.Errorf("no arguments: exit %d, output %q; want 2 and usage", code, out)
	}
	out, code = runCheck(t, filepath.Join(t.TempDir(), "nope.ps1"))
	if code != 2 {
		t.Errorf("missing file: exit %d, output %q; want 2", code, out)
	}
}
