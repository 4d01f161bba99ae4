//go:build linux

// Command bench measures swdt kubernetes against simnodes on loopback and
// prints ratios taken in one run (DESIGN.md §8, docs/benchmarks.md):
//
//   - stage+swap of a large binary vs OpenSSH's sftp -b sending the same
//     bytes to the same simnode;
//   - a re-run with nothing changed vs that transfer;
//   - service downtime per swap for a 10 MB and a 200 MB binary, and of
//     every service the swap stopped;
//   - peak RSS of swdt while it sends 200 MB, whole and as a patch;
//   - N nodes in parallel vs one node, with services that take 200 ms to
//     stop and start and with instant ones, and the CPU time swdt and the
//     simnodes spent;
//   - on Debian's sshd with the same cipher on both sides: swdt's upload
//     (pkg/remote) vs sftp -b (sshd.go; -only sshd runs just this);
//   - pushes of a rebuilt Windows binary through emulated LAN, VPN and
//     slow links: OpenSSH sftp, swdt plain, compressed and delta
//     (links.go; -only links runs just these);
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
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "upload" {
		// A child of the Debian sshd comparison (sshd.go).
		if err := upload(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench upload:", err)
			os.Exit(1)
		}
		return
	}
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
	sshdRounds    int
	only          string
}

func run() error {
	var o options
	flag.StringVar(&o.swdt, "swdt", "bin/swdt", "swdt binary")
	flag.StringVar(&o.simnode, "simnode", "bin/simnode", "simnode binary")
	flag.IntVar(&o.bigMB, "big-mb", 128, "size in MB of the binary compared with sftp")
	flag.IntVar(&o.nodes, "nodes", 10, "nodes of the parallel measurement")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds of the link runs (each contender once per round, order rotated)")
	flag.IntVar(&o.sshdRounds, "sshd-rounds", 5, "rounds of the Debian sshd comparison (each client once per round, order rotated)")
	flag.StringVar(&o.only, "only", "", "run only one part: links (the link runs), sshd (the Debian sshd comparison) or fanout (N nodes vs one)")
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
	if b.o.only != "" {
		part, ok := map[string]func() error{
			"links":  func() error { return b.linkRuns(b.o.rounds) },
			"sshd":   func() error { return b.debianSSHD(b.o.sshdRounds) },
			"fanout": b.parallel,
		}[b.o.only]
		if !ok {
			return fmt.Errorf("-only %s: want links, sshd or fanout", b.o.only)
		}
		if err := part(); err != nil {
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
		b.add("downtime of every stopped service, "+c.name, strings.Join(r.services, ", "), "")
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

	if err := b.parallel(); err != nil {
		return err
	}
	if err := b.debianSSHD(b.o.sshdRounds); err != nil {
		return err
	}
	if err := b.linkRuns(b.o.rounds); err != nil {
		return err
	}
	b.print()
	return nil
}

// parallel compares one node with N nodes swapping a 1 MB binary each, so
// that the figure shows swdt's concurrency rather than the loopback's
// encryption throughput on a small machine: once with services that take
// simnode's default 200 ms to stop and 200 ms to start, once with instant
// ones, where swdt's and the simnodes' own work is all there is.
func (b *bench) parallel() error {
	if b.o.nodes < 2 {
		return nil
	}
	for _, v := range []struct {
		name, prefix string
		flags        []string
	}{
		{"200 ms services", "par", nil},
		{"instant services", "inst", []string{"--start-delay", "0", "--stop-delay", "0"}},
	} {
		if err := b.fanOut(v.name, v.prefix, v.flags); err != nil {
			return err
		}
	}
	return nil
}

// fanOut measures one node against N, simnodes started with flags, and
// the CPU time swdt and the simnodes spent in each run.
func (b *bench) fanOut(name, prefix string, flags []string) error {
	fmt.Fprintf(os.Stderr, "bench: %d nodes in parallel, %s\n", b.o.nodes, name)
	var sims []*simnode
	defer func() {
		for _, s := range sims {
			s.stop()
		}
	}()
	for i := 0; i < b.o.nodes; i++ {
		s, err := b.startSimnode(fmt.Sprintf("%s%d", prefix, i), flags...)
		if err != nil {
			return err
		}
		sims = append(sims, s)
	}
	small := b.file(prefix+"-one.exe", 1<<20)
	if err := b.deliver(b.config(prefix+"-many", sims, small)); err != nil {
		return err
	}
	run := func(sims []*simnode, config string) (swdtRun, time.Duration, error) {
		before := simnodesCPU(sims)
		r, err := b.swdt(config, "--settle", "0")
		return r, simnodesCPU(sims) - before, err
	}
	one, oneSim, err := run(sims[:1], b.config(prefix+"-one", sims[:1], small))
	if err != nil {
		return err
	}
	many, manySim, err := run(sims, b.config(prefix+"-many", sims, b.file(prefix+"-one-v2.exe", 1<<20)))
	if err != nil {
		return err
	}
	cpu := func(r swdtRun, sim time.Duration) string {
		return fmt.Sprintf("%s (CPU: swdt %s, simnodes %s, of %s on %d cores)", secs(r.wall), secs(r.cpu), secs(sim),
			secs(r.wall*time.Duration(runtime.NumCPU())), runtime.NumCPU())
	}
	b.add(fmt.Sprintf("%s: 1 node, 1 MB swap (wall)", name), cpu(one, oneSim), "")
	b.add(fmt.Sprintf("%s: %d nodes, 1 MB swap each (wall)", name, b.o.nodes), cpu(many, manySim), "")
	goal := ""
	if flags == nil {
		goal = "<= 1.5"
	}
	b.add(fmt.Sprintf("%s: ratio %d nodes / 1 node", name, b.o.nodes), ratio(many.wall, one.wall), goal)
	return nil
}

// simnodesCPU is the CPU time (user and system) the simnodes' processes
// have used so far.
func simnodesCPU(sims []*simnode) time.Duration {
	var total time.Duration
	for _, s := range sims {
		total += procCPU(s.cmd.Process.Pid, false)
	}
	return total
}

// procCPU is the CPU time (user and system) process pid has used so far,
// from /proc/<pid>/stat; with children, that of its children it has
// waited for instead (0 when it cannot be read).
func procCPU(pid int, children bool) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which may hold spaces: state is the
	// 3rd field of proc_pid_stat(5), utime and stime the 14th and 15th,
	// cutime and cstime the 16th and 17th.
	_, rest, _ := strings.Cut(string(raw), ") ")
	f := strings.Fields(rest)
	i := 11
	if children {
		i = 13
	}
	if len(f) < i+2 {
		return 0
	}
	var total time.Duration
	for _, v := range f[i : i+2] {
		ticks, _ := strconv.ParseInt(v, 10, 64)
		total += time.Duration(ticks) * time.Second / clockTicks
	}
	return total
}

// clockTicks is Linux's USER_HZ, the unit of /proc's CPU times.
const clockTicks = 100

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
	wall, _, err := b.sftp(s.addr, "Administrator", s.knownHosts, local, remote)
	return wall, err
}

// sftp times OpenSSH's sftp -b putting local to remote on addr as user,
// process start to exit, with the cipher pinned; cpu is that of sftp and
// its ssh.
func (b *bench) sftp(addr, user, knownHosts, local, remote string) (wall, cpu time.Duration, err error) {
	batch := filepath.Join(b.dir, "sftp.batch")
	if err := os.WriteFile(batch, []byte(fmt.Sprintf("put %s %s\n", local, remote)), 0o600); err != nil {
		return 0, 0, err
	}
	host, port, _ := strings.Cut(addr, ":")
	start := time.Now()
	cmd := exec.Command("sftp", "-q", "-b", batch, "-i", b.key, "-P", port, "-c", cipher,
		"-o", "UserKnownHostsFile="+knownHosts, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
		user+"@"+host)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("sftp: %w: %s", err, out)
	}
	return time.Since(start), cpuOf(cmd.ProcessState), nil
}

// swdtRun is one timed swdt kubernetes run.
type swdtRun struct {
	wall     time.Duration
	downtime time.Duration
	action   string
	maxRSSKB int64
	// cpu is the user and system CPU time of the swdt process.
	cpu time.Duration
	// services is every stopped service's downtime, "name N ms", in stop
	// order, on every node.
	services []string
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
			Services []struct {
				Name       string `json:"name"`
				DowntimeMs int64  `json:"downtimeMs"`
			} `json:"services"`
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
		for _, s := range n.Services {
			r.services = append(r.services, fmt.Sprintf("%s %d ms", s.Name, s.DowntimeMs))
		}
		for _, p := range n.Provisioners {
			r.action, r.transfer, r.bytesSent = p.Action, p.Transfer, p.BytesSent
			r.downtime = max(r.downtime, time.Duration(p.DowntimeMs)*time.Millisecond)
		}
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSSKB = int64(ru.Maxrss) // kilobytes on Linux
	}
	r.cpu = cpuOf(cmd.ProcessState)
	return r, nil
}

// cpuOf is the user and system CPU time of an exited process, with that
// of the children it waited for.
func cpuOf(ps *os.ProcessState) time.Duration {
	return ps.UserTime() + ps.SystemTime()
}

func mbytes(kb int64) string      { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }
func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
func ms(d time.Duration) string   { return fmt.Sprintf("%d ms", d.Milliseconds()) }
func ratio(a, b time.Duration) string {
	return fmt.Sprintf("%.2fx", a.Seconds()/b.Seconds())
}
