//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// agent measures what swdt-agent costs on first contact: `swdt status` on
// a node that has never seen it (the upload of the agent, its check, one
// op) against the same command once the agent is there (one op).
func (b *bench) agent(s *simnode, config string) error {
	fmt.Fprintln(os.Stderr, "bench: swdt-agent on first contact")
	first, err := b.status(config)
	if err != nil {
		return err
	}
	if !strings.Contains(first.log, "swdt-agent uploaded and verified") {
		return fmt.Errorf("first contact: swdt did not upload the agent:\n%s", first.log)
	}
	next, err := b.status(config)
	if err != nil {
		return err
	}
	if !strings.Contains(next.log, "nothing sent") {
		return fmt.Errorf("next contact: swdt sent the agent again:\n%s", next.log)
	}
	size := int64(0)
	if fi, err := os.Stat(filepath.Join(s.state, "fs", "C", "ProgramData", "swdt")); err == nil && fi.IsDir() {
		entries, _ := os.ReadDir(filepath.Join(s.state, "fs", "C", "ProgramData", "swdt"))
		for _, e := range entries {
			if info, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), "swdt-agent-") {
				size = info.Size()
			}
		}
	}
	b.add("swdt status, first contact (uploads the agent)", secs(first.wall), "")
	b.add("swdt status, agent already there", secs(next.wall), "")
	b.add(fmt.Sprintf("agent upload on first contact (%.1f MB, once per node and version)", float64(size)/(1<<20)),
		secs(first.wall-next.wall), "")
	return nil
}

// deliver puts the agent on every simnode of config, so that the
// measurements after it compare runs that all find it there.
func (b *bench) deliver(config string) error {
	_, err := b.status(config)
	return err
}

// statusRun is one timed swdt status run and its -v log.
type statusRun struct {
	wall time.Duration
	log  string
}

func (b *bench) status(config string) (statusRun, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.o.swdt, "status", "-c", config, "-v", "--no-color", "--cache-dir", filepath.Join(b.dir, "cache"))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return statusRun{}, fmt.Errorf("swdt status: %w\n%s", err, out)
	}
	return statusRun{wall: time.Since(start), log: string(out)}, nil
}
