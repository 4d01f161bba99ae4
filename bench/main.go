//go:build linux

// Command bench measures swdt kubernetes against simnodes on loopback and
// prints ratios taken in one run (DESIGN.md §8, docs/benchmarks.md):
//
//   - stage+swap of a large binary vs OpenSSH's sftp -b sending the same
//     bytes to the same simnode;
//   - a re-run with nothing changed vs that transfer;
//   - service downtime per swap for a 10 MB and a 200 MB binary;
//   - peak RSS of swdt while it sends 200 MB, whole and as a patch;
//   - N nodes in parallel vs one node;
//   - pushes of a rebuilt Windows binary through emulated LAN, VPN and
//     slow links: OpenSSH sftp, swdt plain, compressed and delta
//     (links.go; -links-only runs just these);
//   - swdt-agent's upload on first contact.
//
// It runs the built binaries as a user would (make bench builds them),
// generates its files in a temporary directory and removes it afterwards.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type options struct {
	swdt, simnode string
	bigMB         int
	nodes         int
	keep          bool
	rounds        int
	linksOnly     bool
}

func run() error {
	var o options
	flag.StringVar(&o.swdt, "swdt", "bin/swdt", "swdt binary")
	flag.StringVar(&o.simnode, "simnode", "bin/simnode", "simnode binary")
	flag.IntVar(&o.bigMB, "big-mb", 128, "size in MB of the binary compared with sftp")
	flag.IntVar(&o.nodes, "nodes", 10, "nodes of the parallel measurement")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of the link runs (each contender once per round, order rotated)")
	flag.BoolVar(&o.linksOnly, "links-only", false, "run only the link runs")
	flag.Parse()
	for _, p := range []*string{&o.swdt, &o.simnode} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	if _, err := exec.LookPath("sftp"); err != nil {
		return errors.New("OpenSSH's sftp client is needed for the baseline (apt-get install openssh-client)")
	}
	dir, err := os.MkdirTemp("", "swdt-bench-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(dir)
	}
	b := &bench{o: o, dir: dir}
	return b.all()
}

type bench struct {
	o   options
	dir string
	key string
	out []figure
}

// figure is one printed measurement.
type figure struct {
	name, value, goal string
}

func (b *bench) add(name, value, goal string) {
	b.out = append(b.out, figure{name, value, goal})
	fmt.Fprintf(os.Stderr, "  %s: %s\n", name, value)
}

func (b *bench) all() error {
	b.key = filepath.Join(b.dir, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", b.key).CombinedOutput(); err != nil {
		return fmt.Errorf("ssh-keygen: %w: %s", err, out)
	}
	if b.o.linksOnly {
		if err := b.linkRuns(b.o.rounds); err != nil {
			return err
		}
		b.print()
		return nil
	}
	big := b.file("big.exe", b.o.bigMB<<20)
	mb10 := b.file("ten.exe", 10<<20)
	mb200 := b.file("twohundred.exe", 200<<20)

	// The transfer is measured against a simnode whose services stop and
	// start at once, so that the ratio is swdt's own cost (connect,
	// inspect, local and on-node SHA-256, upload, renames), not the
	// simulator's service delays; downtime is measured below with them.
	fmt.Fprintln(os.Stderr, "bench: starting simnodes")
	fast, err := b.startSimnode("fast", "--start-delay", "0", "--stop-delay", "0")
	if err != nil {
		return err
	}
	defer fast.stop()
	sim, err := b.startSimnode("node0")
	if err != nil {
		return err
	}
	defer sim.stop()
	cfg := b.config("single", []*simnode{fast}, big)
	if err := b.agent(fast, cfg); err != nil {
		return err
	}
	if err := b.deliver(b.config("size", []*simnode{sim}, mb10)); err != nil {
		return err
	}

	// The baseline: OpenSSH's sftp putting the same bytes on the same
	// server (connection set-up included, as swdt's is).
	fmt.Fprintln(os.Stderr, "bench: OpenSSH sftp -b baseline")
	sftpTime, err := b.sftpPut(fast, big, "/C:/bench-baseline.bin")
	if err != nil {
		return err
	}
	b.add(fmt.Sprintf("sftp -b put %d MB", b.o.bigMB), secs(sftpTime), "")

	fmt.Fprintln(os.Stderr, "bench: swdt kubernetes, changed binary")
	first, err := b.swdt(cfg, "--settle", "0")
	if err != nil {
		return err
	}
	b.add(fmt.Sprintf("swdt stage+swap %d MB (wall, instant services)", b.o.bigMB), secs(first.wall), "")
	b.add("ratio swdt stage+swap / sftp", ratio(first.wall, sftpTime), "<= 1.10")

	fmt.Fprintln(os.Stderr, "bench: swdt kubernetes, nothing changed")
	again, err := b.swdt(cfg)
	if err != nil {
		return err
	}
	if again.action != "unchanged" {
		return fmt.Errorf("re-run: action %s, want unchanged", again.action)
	}
	b.add("swdt re-run, nothing changed (wall)", secs(again.wall), "")
	b.add("ratio re-run / sftp", ratio(again.wall, sftpTime), "< 0.05")

	fmt.Fprintln(os.Stderr, "bench: downtime per size")
	for _, c := range []struct {
		name, path string
	}{{"10 MB", mb10}, {"200 MB", mb200}} {
		r, err := b.swdt(b.config("size", []*simnode{sim}, c.path), "--settle", "0")
		if err != nil {
			return err
		}
		b.add("downtime per swap, "+c.name, ms(r.downtime), "< 2 s (simnode stop 200 ms + start 200 ms)")
		if c.path == mb200 {
			b.add(fmt.Sprintf("peak RSS of swdt sending 200 MB with the defaults (loopback: %s)", r.transfer), mbytes(r.maxRSSKB), "< 64 MB")
			b.add("swdt stage+swap 200 MB (wall, 200 ms services)", secs(r.wall), "")
			// Again compressed (a fixed level: on loopback auto sends
			// files as they are): swdt has no copy of the node's file, so
			// no patch, and it keeps one of this; then a changed build
			// goes as a patch.
			w, err := b.swdt(b.config("size", []*simnode{sim}, c.path), "--settle", "0", "--force", "--compress", "1")
			if err != nil {
				return err
			}
			if w.transfer != "compressed" {
				return fmt.Errorf("200 MB: transfer %s, want compressed", w.transfer)
			}
			b.add("peak RSS of swdt sending 200 MB compressed (no patch)", mbytes(w.maxRSSKB), "< 64 MB")
			v2, err := b.variant(c.path, "twohundred-v2.exe")
			if err != nil {
				return err
			}
			p, err := b.swdt(b.config("size-v2", []*simnode{sim}, v2), "--settle", "0", "--compress", "1")
			if err != nil {
				return err
			}
			if p.transfer != "patch" {
				return fmt.Errorf("200 MB rebuild: transfer %s, want patch", p.transfer)
			}
			b.add("peak RSS of swdt sending 200 MB as a patch", mbytes(p.maxRSSKB), "< 256 MB")
		}
	}
	sim.stop()
	fast.stop()

	if b.o.nodes > 1 {
		if err := b.parallel(); err != nil {
			return err
		}
	}
	if err := b.linkRuns(b.o.rounds); err != nil {
		return err
	}
	b.print()
	return nil
}

// parallel compares one node with N nodes swapping a 1 MB binary each, so
// that the figure shows swdt's concurrency rather than the loopback's
// encryption throughput on a small machine.
func (b *bench) parallel() error {
	fmt.Fprintf(os.Stderr, "bench: %d nodes in parallel\n", b.o.nodes)
	var sims []*simnode
	defer func() {
		for _, s := range sims {
			s.stop()
		}
	}()
	for i := 0; i < b.o.nodes; i++ {
		s, err := b.startSimnode(fmt.Sprintf("par%d", i))
		if err != nil {
			return err
		}
		sims = append(sims, s)
	}
	small := b.file("one.exe", 1<<20)
	if err := b.deliver(b.config("many", sims, small)); err != nil {
		return err
	}
	one, err := b.swdt(b.config("one", sims[:1], small), "--settle", "0")
	if err != nil {
		return err
	}
	small2 := b.file("one-v2.exe", 1<<20)
	many, err := b.swdt(b.config("many", sims, small2), "--settle", "0")
	if err != nil {
		return err
	}
	b.add("1 node, 1 MB swap (wall)", secs(one.wall), "")
	b.add(fmt.Sprintf("%d nodes, 1 MB swap each (wall)", b.o.nodes), secs(many.wall), "")
	b.add(fmt.Sprintf("ratio %d nodes / 1 node", b.o.nodes), ratio(many.wall, one.wall), "<= 1.5")
	return nil
}

func (b *bench) print() {
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEASUREMENT\tVALUE\tGOAL")
	for _, f := range b.out {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", f.name, f.value, f.goal)
	}
	tw.Flush()
}

// file writes size pseudo-random bytes (incompressible, like a binary,
// and free of simnode's markers) under name.
func (b *bench) file(name string, size int) string {
	p := filepath.Join(b.dir, name)
	f, err := os.Create(p)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.NewChaCha8([32]byte{byte(len(name)), byte(size)})
	_, _ = w.WriteString("MZ")
	if _, err := io.CopyN(w, r, int64(size-2)); err != nil {
		panic(err)
	}
	if err := w.Flush(); err != nil {
		panic(err)
	}
	return p
}

// variant copies the file at src to name with a few bytes changed in the
// middle, as a rebuild with a small change.
func (b *bench) variant(src, name string) (string, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("a variant of %s: %w", src, err)
	}
	copy(data[len(data)/2:], "a small change in the middle")
	p := filepath.Join(b.dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return "", fmt.Errorf("a variant of %s: %w", src, err)
	}
	return p, nil
}

// simnode is a running simnode process.
type simnode struct {
	cmd        *exec.Cmd
	addr       string
	state      string
	knownHosts string
}

func (b *bench) startSimnode(name string, flags ...string) (*simnode, error) {
	state := filepath.Join(b.dir, name)
	args := append([]string{"--listen", "127.0.0.1:0", "--state-dir", state, "--authorized-key", b.key + ".pub"}, flags...)
	cmd := exec.Command(b.o.simnode, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start simnode: %w", err)
	}
	s := &simnode{cmd: cmd, state: state, knownHosts: filepath.Join(state, "known_hosts")}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "address:"); ok {
			s.addr = strings.TrimSpace(v)
			break
		}
	}
	if s.addr == "" {
		s.stop()
		return nil, errors.New("simnode did not print its address")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return s, nil
}

func (s *simnode) stop() {
	if s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// config writes a node file with one kubelet provisioner fed by source
// on every simnode.
func (b *bench) config(name string, sims []*simnode, source string) string {
	var buf bytes.Buffer
	for i, s := range sims {
		fmt.Fprintf(&buf, `---
apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: node%d
spec:
  credentials:
    hostname: %q
    username: Administrator
    privateKey: %q
    knownHostsFile: %q
    hostKeyPolicy: strict
  kubernetes:
    provisioners:
    - name: kubelet
      sourceURL: %q
      destination: 'C:\k\kubelet.exe'
`, i, s.addr, b.key, s.knownHosts, source)
	}
	p := filepath.Join(b.dir, name+".yaml")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		panic(err)
	}
	return p
}

func (b *bench) sftpPut(s *simnode, local, remote string) (time.Duration, error) {
	batch := filepath.Join(b.dir, "sftp.batch")
	if err := os.WriteFile(batch, []byte(fmt.Sprintf("put %s %s\n", local, remote)), 0o600); err != nil {
		return 0, err
	}
	host, port, _ := strings.Cut(s.addr, ":")
	start := time.Now()
	out, err := exec.Command("sftp", "-q", "-b", batch, "-i", b.key, "-P", port, "-c", cipher,
		"-o", "UserKnownHostsFile="+s.knownHosts, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
		"Administrator@"+host).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("sftp: %w: %s", err, out)
	}
	return time.Since(start), nil
}

// swdtRun is one timed swdt kubernetes run.
type swdtRun struct {
	wall     time.Duration
	downtime time.Duration
	action   string
	maxRSSKB int64
	// transfer and bytesSent are those of the last provisioner.
	transfer  string
	bytesSent int64
}

func (b *bench) swdt(config string, extra ...string) (swdtRun, error) {
	return b.swdtIn(filepath.Join(b.dir, "cache"), config, extra...)
}

func (b *bench) swdtIn(cache, config string, extra ...string) (swdtRun, error) {
	args := append([]string{"kubernetes", "-c", config, "-o", "json", "--cache-dir", cache}, extra...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.o.swdt, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return swdtRun{}, fmt.Errorf("swdt %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var doc struct {
		Nodes []struct {
			Provisioners []struct {
				Action     string `json:"action"`
				DowntimeMs int64  `json:"downtimeMs"`
				BytesSent  int64  `json:"bytesSent"`
				Transfer   string `json:"transfer"`
			} `json:"provisioners"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		return swdtRun{}, fmt.Errorf("swdt output: %w", err)
	}
	r := swdtRun{wall: wall}
	for _, n := range doc.Nodes {
		for _, p := range n.Provisioners {
			r.action, r.transfer, r.bytesSent = p.Action, p.Transfer, p.BytesSent
			r.downtime = max(r.downtime, time.Duration(p.DowntimeMs)*time.Millisecond)
		}
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSSKB = int64(ru.Maxrss) // kilobytes on Linux
	}
	return r, nil
}

func mbytes(kb int64) string      { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }
func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
func ms(d time.Duration) string   { return fmt.Sprintf("%d ms", d.Milliseconds()) }
func ratio(a, b time.Duration) string {
	return fmt.Sprintf("%.2fx", a.Seconds()/b.Seconds())
}
