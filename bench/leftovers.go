//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// pidFile, in a run's directory, names the bench process that owns it.
const pidFile = "bench.pid"

// claimDir records that this process owns the run's directory dir.
func claimDir(dir string) error {
	return os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(os.Getpid())), 0o600)
}

// sweepLeftovers removes the run directories (swdt-bench-*) below parent
// that a bench which no longer runs left behind (it was killed: its
// deferred removal never ran, and on /dev/shm they hold gigabytes of
// memory). A directory without a pid file, or whose owner still runs (a
// bench beside this one), is left alone. It returns what it removed.
func sweepLeftovers(parent string, alive func(pid int) bool) []string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "swdt-bench-") {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		raw, err := os.ReadFile(filepath.Join(dir, pidFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || pid <= 0 || alive(pid) {
			continue
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}
