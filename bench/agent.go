//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// agentRounds measures what swdt-agent costs on first contact: `swdt
// status` on a node that has never seen it (the upload of the agent, its
// check, one op) against the same command once the agent is there (one
// op), on a new simnode every round.
func (b *bench) agentRounds(rounds int) error {
	fmt.Fprintln(os.Stderr, "bench: swdt-agent on first contact")
	var first, next series
	size := int64(0)
	for round := range rounds {
		s, err := b.startSimnode(fmt.Sprintf("agent%d", round), "--start-delay", "0", "--stop-delay", "0")
		if err != nil {
			return err
		}
		config := b.config(fmt.Sprintf("agent%d", round), []*simnode{s}, filepath.Join(b.dir, "none.exe"))
		f, err := b.status(config)
		if err == nil && !strings.Contains(f.log, "swdt-agent uploaded") {
			err = fmt.Errorf("first contact: swdt did not upload the agent:\n%s", f.log)
		}
		var n statusRun
		if err == nil {
			n, err = b.status(config)
		}
		if err == nil && !strings.Contains(n.log, "nothing sent") {
			err = fmt.Errorf("next contact: swdt sent the agent again:\n%s", n.log)
		}
		dir := filepath.Join(s.state, "fs", "C", "Program Files", "swdt")
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if info, ierr := e.Info(); ierr == nil && strings.HasPrefix(e.Name(), "swdt-agent-") {
				size = info.Size()
			}
		}
		s.stop()
		if err != nil {
			return err
		}
		first, next = append(first, f.wall), append(next, n.wall)
	}
	b.add("swdt status, first contact (uploads the agent)", first.String(), "")
	b.add("swdt status, agent already there", next.String(), "")
	b.add(fmt.Sprintf("agent upload on first contact (%.1f MB, once per node and version; difference of medians)", float64(size)/(1<<20)),
		secs(first.med()-next.med()), "")
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
	var out bytes.Buffer
	m, err := b.timed(&out, &out, b.o.swdt, "status", "-c", config, "-v", "--no-color", "--cache-dir", filepath.Join(b.dir, "cache"))
	if err != nil {
		return statusRun{}, fmt.Errorf("swdt status: %w\n%s", err, out.String())
	}
	return statusRun{wall: m.Wall, log: out.String()}, nil
}
