package wine

import (
	"encoding/json"
	"strings"
	"testing"
)

// swdt wins deploys a wins.exe that registers a real service serving
// real named pipes, and verify --deep runs a process through them.
func TestWinsDeployVerifyDeep(t *testing.T) {
	n := newNode(t)
	n.writeConfig(`  wins:
    sourceURL: ./wins.exe
`)
	n.write("wins.exe", shared.fakewins)
	code, out, _ := n.swdt("wins", "--deep", "-o", "json", "--settle", "1s")
	var doc struct {
		Nodes []struct {
			Deploy *struct{ Action string }
			Checks []struct {
				Name, Result, Detail string
				OK                   bool
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Nodes) != 1 {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	got := doc.Nodes[0]
	if code != 0 || got.Deploy == nil || got.Deploy.Action != "installed" {
		t.Errorf("exit %d, deploy %+v", code, got.Deploy)
	}
	var names []string
	for _, c := range got.Checks {
		names = append(names, c.Name)
		if !c.OK {
			t.Errorf("check %s failed: %s", c.Name, c.Detail)
		}
	}
	if len(names) != 4 {
		t.Errorf("checks %v, want service, pipes, get-version and deep", names)
	}

	// Uninstall stops the service, which wins.exe then deletes.
	code, out, _ = n.swdt("wins", "uninstall", "-o", "json")
	var un struct {
		Nodes []struct {
			Uninstall *struct{ ServiceRemoved bool }
		}
	}
	if err := json.Unmarshal([]byte(out), &un); err != nil || code != 0 || len(un.Nodes) != 1 || un.Nodes[0].Uninstall == nil || !un.Nodes[0].Uninstall.ServiceRemoved {
		t.Errorf("uninstall: exit %d, %v:\n%s", code, err, out)
	}
	if code, _, errOut := n.swdt("wins", "verify"); code != 3 || !strings.Contains(errOut, "not registered") {
		t.Errorf("verify after uninstall: exit %d", code)
	}
}
