package winos

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestScriptFiles checks that every file of scripts/ is a script or a
// prelude, that each script's own text starts with a header naming it and
// the language mode it needs, and that every script with preludes starts
// with their text.
func TestScriptFiles(t *testing.T) {
	files, err := fs.Glob(scriptFS, "scripts/*.ps1")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, s := range Scripts() {
		used[s.name] = true
		own := embedded(s.name)
		if !strings.HasPrefix(own, "# script: "+s.name+"\n") {
			t.Errorf("scripts/%s.ps1 does not start with '# script: %s'", s.name, s.name)
		}
		if _, rest, _ := strings.Cut(own, "\n"); !strings.HasPrefix(rest, "# language: constrained\n") && !strings.HasPrefix(rest, "# language: full\n") {
			t.Errorf("scripts/%s.ps1: the second line is not '# language: constrained' or '# language: full'", s.name)
		}
		want := ""
		for _, p := range s.preludes {
			if p != "" {
				used[p] = true
				want += embedded(p)
			}
		}
		if s.Source() != want+own {
			t.Errorf("%s: source is not its preludes %q then its own text", s.name, s.preludes)
		}
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "scripts/"), ".ps1")
		if !used[name] {
			t.Errorf("%s is neither a script of Scripts() nor a prelude of one", f)
		}
	}
}

// TestHyperVScriptsKeepNamesData checks the rule that keeps the Hyper-V
// scripts safe with any VM or checkpoint name: names are never handed to a
// cmdlet parameter that reads wildcards (only the prelude's lookups take
// them, and compare with -eq), and nothing in them evaluates text as
// code.
func TestHyperVScriptsKeepNamesData(t *testing.T) {
	wildcardName := regexp.MustCompile(`(?i)-(VMName|Name|SnapshotName)\s+\$`)
	evaluates := regexp.MustCompile(`(?i)Invoke-Expression|\biex\b|\[scriptblock\]::Create|ExpandString`)
	var hyperv []Script
	for _, s := range Scripts() {
		if strings.HasPrefix(s.Name(), "hyperv-") {
			hyperv = append(hyperv, s)
		}
	}
	if len(hyperv) != 7 {
		t.Fatalf("Hyper-V scripts = %d, want 7 (one per Hyper-V op)", len(hyperv))
	}
	allowed := []string{"Get-SwdtVM -Name", "Get-SwdtCheckpoint -VM $vm -Name", "Get-Module -ListAvailable -Name Hyper-V",
		"Import-Module -Name Hyper-V", "Checkpoint-VM -SnapshotName $name"}
	for _, s := range hyperv {
		for i, line := range strings.Split(s.Source(), "\n") {
			code, _, _ := strings.Cut(line, "#")
			if m := wildcardName.FindString(code); m != "" && !containsAny(code, allowed) {
				t.Errorf("%s:%d: %s passes a name to a parameter that reads wildcards; compare with -eq", s.Name(), i+1, m)
			}
			if m := evaluates.FindString(code); m != "" {
				t.Errorf("%s:%d: %s evaluates text as code", s.Name(), i+1, m)
			}
		}
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
