//go:build linux

package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A killed bench's directory is swept by the next; one whose bench still
// runs, one without an owner and anything else are left alone.
func TestSweepLeftovers(t *testing.T) {
	parent := t.TempDir()
	const alivePID = 100
	dirs := []struct {
		name, pid string
		swept     bool
	}{
		{name: "swdt-bench-killed", pid: "200", swept: true},
		{name: "swdt-bench-running", pid: "100"},
		{name: "swdt-bench-kept"},
		{name: "swdt-bench-garbled", pid: "not a pid"},
		{name: "other-dead", pid: "200"},
	}
	for _, d := range dirs {
		dir := filepath.Join(parent, d.name)
		if err := os.MkdirAll(filepath.Join(dir, "sim", "fs"), 0o700); err != nil {
			t.Fatal(err)
		}
		if d.pid != "" {
			if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(d.pid), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	removed := sweepLeftovers(parent, func(pid int) bool { return pid == alivePID })
	for _, d := range dirs {
		dir := filepath.Join(parent, d.name)
		_, err := os.Stat(dir)
		if gone := os.IsNotExist(err); gone != d.swept || slices.Contains(removed, dir) != d.swept {
			t.Errorf("%s: gone %v (reported %v), want %v", d.name, gone, slices.Contains(removed, dir), d.swept)
		}
	}
}

// claimDir names this process, which runs.
func TestClaimDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "swdt-bench-x")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := claimDir(dir); err != nil {
		t.Fatal(err)
	}
	if removed := sweepLeftovers(filepath.Dir(dir), processAlive); len(removed) != 0 {
		t.Errorf("swept the directory of a running bench: %v", removed)
	}
}
