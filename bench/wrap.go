//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	simnodes "sigs.k8s.io/swdt/pkg/simnode"
)

// The bench times every client (swdt, sftp, rsync) through execwrap
// (bench/execwrap), a small program it builds at its start: it runs the
// client, measures it from its start to its exit, and writes its peak RSS
// and CPU time to a file. Timing in a small parent keeps the client's peak
// RSS its own (execwrap says why).

// measured is one timed process, as execwrap writes it.
type measured struct {
	Wall     time.Duration `json:"wall"`
	CPU      time.Duration `json:"cpu"`
	MaxRSSKB int64         `json:"maxRSSKB"`
}

// buildWrapper builds execwrap into dir and returns its path.
func buildWrapper(dir string) (string, error) {
	p := filepath.Join(dir, "execwrap")
	if out, err := exec.Command("go", "build", "-o", p, "sigs.k8s.io/swdt/bench/execwrap").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the timing parent (bench/execwrap): %w: %s", err, out)
	}
	return p, nil
}

// timed runs prog through execwrap and returns what it measured; stdout
// and stderr receive the program's output (nil discards).
func (b *bench) timed(stdout, stderr io.Writer, prog string, args ...string) (measured, error) {
	b.quiet()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	result := filepath.Join(b.dir, "measured.json")
	_ = os.Remove(result)
	var errBuf bytes.Buffer
	if stderr == nil {
		stderr = &errBuf
	}
	cmd := exec.CommandContext(ctx, b.wrapper, append([]string{result, prog}, args...)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		return measured{}, fmt.Errorf("%s %s: %w\n%s", filepath.Base(prog), strings.Join(args, " "), err, errBuf.String())
	}
	raw, err := os.ReadFile(result)
	if err != nil {
		return measured{}, fmt.Errorf("%s: what execwrap measured: %w", prog, err)
	}
	var m measured
	if err := json.Unmarshal(raw, &m); err != nil {
		return measured{}, fmt.Errorf("%s: what execwrap measured: %w", prog, err)
	}
	return m, nil
}

// quiet waits, at most 10 s, until the bench's simnodes have freed the
// files that runs before deleted. A simnode frees a deleted file in the
// background (its state directory's discarded folder; simnode's
// machine/ntfs/discard.go), as NTFS frees clusters in its bitmap; a
// Windows node has no such work left after a delete, so it must not land
// in the time of the run after it.
func (b *bench) quiet() {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		// Every simnode's state directory is a folder of b.dir.
		left, _ := filepath.Glob(filepath.Join(simnodes.DiscardFolder(filepath.Join(b.dir, "*")), "*"))
		if len(left) == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// series is one row's runs.
type series []time.Duration

func (s series) min() time.Duration { return slices.Min(s) }
func (s series) med() time.Duration { return median(s) }

// String is the row's min and median, and how many runs.
func (s series) String() string {
	if len(s) == 0 {
		return "no runs"
	}
	return fmt.Sprintf("min %s, median %s (%d runs)", secs(s.min()), secs(s.med()), len(s))
}

// rssSeries is the peak RSS of a row's runs, in kB.
type rssSeries []int64

func (s rssSeries) String() string {
	if len(s) == 0 {
		return "no runs"
	}
	c := slices.Clone(s)
	slices.Sort(c)
	med := c[len(c)/2]
	if len(c)%2 == 0 {
		med = (c[len(c)/2-1] + c[len(c)/2]) / 2
	}
	return fmt.Sprintf("min %s, median %s (%d runs)", mbytes(c[0]), mbytes(med), len(c))
}

// loadAverage is /proc/loadavg's 1, 5 and 15 minute averages.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " / ")
}
