package simnode

import (
	"testing"

	"sigs.k8s.io/swdt/pkg/winos"
)

// TestEveryScriptSimulated keeps the simulated Windows layer and the fixed
// scripts in step: every script of pkg/winos is played, and nothing else.
func TestEveryScriptSimulated(t *testing.T) {
	known := map[string]bool{}
	for _, s := range winos.Scripts() {
		known[s.Name()] = true
		if scripts[s.Name()] == nil && hypervScripts[s.Name()] == nil {
			t.Errorf("script %s has no simulation in simnode", s.Name())
		}
	}
	for _, table := range []map[string]scriptPlay{scripts, hypervScripts} {
		for name := range table {
			if !known[name] {
				t.Errorf("simnode plays %s, which is not a script of pkg/winos", name)
			}
		}
	}
	for name := range hypervScripts {
		if scripts[name] != nil {
			t.Errorf("%s is played twice", name)
		}
	}
}
