package hvops

import (
	"regexp"
	"strings"
	"testing"
)

// TestScripts checks that each op's header names it, and that no script
// hands a name to a cmdlet parameter that reads wildcards.
func TestScripts(t *testing.T) {
	names := Names()
	if len(names) != 7 {
		t.Fatalf("ops = %v, want 7", names)
	}
	wildcardName := regexp.MustCompile(`(?i)-(VMName|Name)\s+\$`)
	for _, name := range names {
		body, err := Script(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(body, "# op: "+name+"\n") {
			t.Errorf("%s: no '# op: %s' header", name, name)
		}
		for i, line := range strings.Split(body, "\n") {
			code, _, _ := strings.Cut(line, "#")
			if m := wildcardName.FindString(code); m != "" && !strings.Contains(code, "Get-SwdtVM") && !strings.Contains(code, "Get-SwdtCheckpoint") {
				t.Errorf("%s:%d: %s passes a name to a parameter that reads wildcards; compare with -eq", name, i+1, m)
			}
		}
	}
	if _, err := Script("common"); err == nil {
		t.Error("common is not an op")
	}
}
