package simos

import (
	"testing"

	"sigs.k8s.io/swdt/pkg/simnode/programs"
	"sigs.k8s.io/swdt/pkg/winos"
)

// TestEveryScriptSimulated keeps the simulated Windows layer and the fixed
// scripts in step: every script of pkg/winos is played, and nothing else
// (the programs' scripts are checked in their packages).
func TestEveryScriptSimulated(t *testing.T) {
	known := map[string]bool{}
	for _, s := range winos.Scripts() {
		known[s.Name()] = true
		if scripts[s.Name()] == nil && programs.Script(s.Name()) == nil {
			t.Errorf("script %s has no simulation in simnode", s.Name())
		}
	}
	for name := range scripts {
		if !known[name] {
			t.Errorf("simnode plays %s, which is not a script of pkg/winos", name)
		}
	}
	for name := range scripts {
		if programs.Script(name) != nil {
			t.Errorf("%s is played twice", name)
		}
	}
}
