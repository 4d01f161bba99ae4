package hyperv

import (
	"testing"

	"sigs.k8s.io/swdt/pkg/winos"
)

// TestScriptsAreWinosScripts: the Hyper-V host plays only scripts of
// pkg/winos.
func TestScriptsAreWinosScripts(t *testing.T) {
	known := map[string]bool{}
	for _, s := range winos.Scripts() {
		known[s.Name()] = true
	}
	for name := range scripts {
		if !known[name] {
			t.Errorf("simnode plays %s, which is not a script of pkg/winos", name)
		}
	}
}
