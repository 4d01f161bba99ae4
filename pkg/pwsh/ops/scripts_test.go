package ops

import (
	"regexp"
	"strings"
	"testing"
)

// TestScriptsAvoidKnownPitfalls checks the op scripts for Windows
// PowerShell 5.1 traps that simnode cannot show, because it never runs
// the scripts:
//
//   - A native command whose stderr is redirected (2>&1, 2>$null, *>&1)
//     under ErrorActionPreference 'Stop' ends the op at its first stderr
//     line (a NativeCommandError). Such a call must run in a child scope
//     that relaxes the preference, on the same line:
//     & { $ErrorActionPreference = 'Continue'; & $exe ... 2>&1 }.
//   - A list parameter Go sent as null: @($SwdtParams.x) is then an array
//     holding one $null, not an empty one. Lists are read with the nulls
//     filtered out: @($SwdtParams.x | Where-Object { $null -ne $_ }).
//   - Move-Item and Copy-Item treat [ and ] in -Destination as wildcards,
//     and destinations are user paths: files are moved and copied with
//     [System.IO.File] instead.
func TestScriptsAvoidKnownPitfalls(t *testing.T) {
	redirect := regexp.MustCompile(`(2>&1|2>\s*\$null|\*>&1)`)
	bareList := regexp.MustCompile(`@\(\$(SwdtParams|request)\.\w+\)`)
	wildcardCopy := regexp.MustCompile(`(?i)\b(Move|Copy)-Item\b`)
	for _, name := range Names() {
		body, err := Script(name)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(body, "\n") {
			code, _, _ := strings.Cut(line, "#")
			if redirect.MatchString(code) && !strings.Contains(code, "$ErrorActionPreference = 'Continue'") {
				t.Errorf("%s.ps1:%d: stderr redirected outside a scope with ErrorActionPreference 'Continue': %s", name, i+1, strings.TrimSpace(line))
			}
			if m := wildcardCopy.FindString(code); m != "" {
				t.Errorf("%s.ps1:%d: %s reads [ ] in -Destination as wildcards; use [System.IO.File]", name, i+1, m)
			}
			if m := bareList.FindString(code); m != "" {
				t.Errorf("%s.ps1:%d: %s is one $null element when the list is null; filter nulls out", name, i+1, m)
			}
		}
	}
}
