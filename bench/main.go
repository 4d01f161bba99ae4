//go:build linux

// Command bench measures swdt kubernetes against simnodes on loopback and
// through emulated links, and prints figures taken in one run (DESIGN.md
// §8, docs/benchmarks.md). Every row is the min and median of -rounds
// runs, its contenders interleaved in an order rotated every round; every
// client is timed from its start to its exit by a small parent process
// (execwrap, wrap.go), which also reads its own peak RSS. It prints the
// load average it ran under.
//
//   - the agent's upload on first contact;
//   - stage+swap of a large binary vs OpenSSH's sftp -b sending the same
//     bytes to the same simnode, and a re-run with nothing changed;
//   - a rebuild loop with the defaults vs --compress off, the store warm
//     and cold;
//   - service downtime per swap for a 10 MB and a 200 MB binary, and
//     peak RSS of swdt sending 200 MB as it is, compressed and as a patch;
//   - N nodes in parallel vs one node, with services that take 200 ms to
//     stop and start and with instant ones, and the CPU time swdt and the
//     simnodes spent;
//   - on Debian's sshd with the same cipher on both sides: swdt cp vs
//     sftp -b put (sshd.go; -only sshd runs just this);
//   - pushes of a rebuilt Windows binary through emulated LAN, VPN and
//     slow links: OpenSSH sftp, swdt plain, compressed and delta, rsync
//     and rsync -z over ssh to Debian's sshd, the protocol floor, a rebuild
//     swapped by swdt --watch, and on the VPN a large rebuild (links.go;
//     -only links runs just these).
//   - swdt rollout through the Kubernetes API over 1, 10 and 30 Nodes by
//     maxUnavailable, against the cluster tier's control plane with the
//     Nodes' simulated kubelets in this process, when $SWDT_CLUSTER_BIN
//     has it (rollout.go; -only rollout runs just this).
//
// It runs the built binaries as a user would (make bench builds them),
// generates its files in a temporary directory and removes it afterwards.
package main

import (
	"bufio"
	"bytes"
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
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "shape" {
		// A shaper alone, for profiling runs by hand (shaper.go).
		if err := shapeAlone(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench shape:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// memDir is /dev/shm when it is there (Linux's tmpfs), else "" (the
// system's temporary directory). On a disk, the host's writeback of the
// gigabytes the bench writes makes a later run wait: deleting or
// truncating a file whose pages are being written back waits for the
// write (ext4), which a Windows node's deletion does not, and which is
// this machine's, not swdt's.
func memDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "swdt-bench-probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return "/dev/shm"
		}
	}
	return ""
}

type options struct {
	swdt, simnode string
	bigMB         int
	nodes         int
	keep          bool
	rounds        int
	largeMB       int
	only          string
	shapes        string
	dir           string
	kubelet       string
	wideNodes     int
	scaleMB       string
	scaleNodes    string
	scaleFS       string
	rolloutNodes  string
	rolloutMax    string
	rolloutRounds int
}

func run() error {
	var o options
	flag.StringVar(&o.swdt, "swdt", "bin/swdt", "swdt binary")
	flag.StringVar(&o.simnode, "simnode", "bin/simnode", "simnode binary")
	flag.IntVar(&o.bigMB, "big-mb", 128, "size in MB of the binary compared with sftp")
	flag.IntVar(&o.nodes, "nodes", 10, "nodes of the parallel measurement")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory")
	flag.IntVar(&o.rounds, "rounds", 5, "rounds of every measurement (each contender once per round, order rotated)")
	flag.IntVar(&o.largeMB, "large-mb", 128, "size in MB of the large rebuild pushed through the VPN link")
	flag.StringVar(&o.only, "only", "", "run only one part: links (the link runs), sshd (the Debian sshd comparison), fanout (N nodes vs one), loop (the loopback rebuild loop) scaling (patches by file size and node count) or rollout (swdt rollout by Node count and maxUnavailable; needs $SWDT_CLUSTER_BIN)")
	flag.StringVar(&o.shapes, "shapes", "", "the link shapes to run, comma-separated (LAN, VPN, slow; default all)")
	flag.StringVar(&o.dir, "dir", memDir(), "where the bench keeps its files, and the simnodes' and sshd's file systems")
	flag.StringVar(&o.kubelet, "kubelet", kubeletBuilds(), "two Windows builds of kubelet.exe, comma-separated, for the VPN row of a build straight from a build (default: those in $SWDT_CLUSTER_BIN when there; none: no row)")
	flag.IntVar(&o.wideNodes, "wide-nodes", 30, "nodes of the wide fan-out (0: none)")
	flag.StringVar(&o.scaleMB, "scale-mb", "16,64,256", "file sizes in MB of the scaling table (patches on loopback)")
	flag.StringVar(&o.scaleNodes, "scale-nodes", "1,4,10", "node counts of the scaling table")
	flag.StringVar(&o.scaleFS, "scale-fs", "NTFS", "the scaling simnodes' file system: NTFS, or ReFS, which clones a patch's copies (the blocks are shared when -dir is on Btrfs or XFS)")
	flag.StringVar(&o.rolloutNodes, "rollout-nodes", "1,10,30", "Node counts of the rollout scale table (swdt rollout through the Kubernetes API; 1 is the goal's base)")
	flag.StringVar(&o.rolloutMax, "rollout-max", "1,2,5", "maxUnavailable values of the rollout scale table (each where not above the Node count)")
	flag.IntVar(&o.rolloutRounds, "rollout-rounds", 2, "rollouts timed per row of the rollout scale table")
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
	parent := o.dir
	if parent == "" {
		parent = os.TempDir()
	}
	for _, d := range sweepLeftovers(parent, processAlive) {
		fmt.Fprintf(os.Stderr, "removed %s, which a bench that was killed left\n", d)
	}
	dir, err := os.MkdirTemp(o.dir, "swdt-bench-")
	if err != nil {
		return err
	}
	if err := claimDir(dir); err != nil {
		return err
	}
	if o.keep {
		// Kept on purpose: no later bench sweeps it.
		defer os.Remove(filepath.Join(dir, pidFile))
	} else {
		defer os.RemoveAll(dir)
	}
	wrapper, err := buildWrapper(dir)
	if err != nil {
		return err
	}
	b := &bench{o: o, dir: dir, wrapper: wrapper}
	return b.all()
}

type bench struct {
	o       options
	dir     string
	key     string
	wrapper string // execwrap, the timing parent of every client (wrap.go)
	out     []figure
}

// figure is one printed measurement, with the 1-minute load average
// when it was taken.
type figure struct {
	name, value, goal, load string
}

func (b *bench) add(name, value, goal string) {
	load, _, _ := strings.Cut(loadAverage(), " ")
	b.out = append(b.out, figure{name, value, goal, load})
	fmt.Fprintf(os.Stderr, "  %s: %s (load %s)\n", name, value, load)
}

func (b *bench) all() error {
	b.key = filepath.Join(b.dir, "id_ed25519")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", b.key).CombinedOutput(); err != nil {
		return fmt.Errorf("ssh-keygen: %w: %s", err, out)
	}
	b.add("load average (1 / 5 / 15 min) at the start", loadAverage(), "")
	defer func() { b.add("load average (1 / 5 / 15 min) at the end", loadAverage(), "") }()
	if b.o.only != "" {
		part, ok := map[string]func() error{
			"links":   func() error { return b.linkRuns(b.o.rounds) },
			"sshd":    func() error { return b.debianSSHD(b.o.rounds) },
			"fanout":  b.parallel,
			"loop":    b.loopOnly,
			"scaling": b.scaling,
			"rollout": b.rolloutScale,
		}[b.o.only]
		if !ok {
			return fmt.Errorf("-only %s: want links, sshd, fanout, loop, scaling or rollout", b.o.only)
		}
		if err := part(); err != nil {
			return err
		}
		b.print()
		return nil
	}
	if err := b.loopback(); err != nil {
		return err
	}
	if err := b.parallel(); err != nil {
		return err
	}
	if err := b.scaling(); err != nil {
		return err
	}
	if err := b.rolloutScale(); err != nil {
		return err
	}
	if err := b.debianSSHD(b.o.rounds); err != nil {
		return err
	}
	if err := b.linkRuns(b.o.rounds); err != nil {
		return err
	}
	b.print()
	return nil
}

// loopback measures on simnodes without a shaper: the agent on first
// contact, stage+swap against sftp, a re-run, a rebuild loop with the
// defaults against --compress off (store warm and cold), downtime, and
// peak RSS.
func (b *bench) loopback() error {
	rounds := b.o.rounds
	big := [2]string{b.file("big.exe", b.o.bigMB<<20), b.file("big-b.exe", b.o.bigMB<<20)}
	bigV, err := b.variant(big[0], "big-v2.exe")
	if err != nil {
		return err
	}
	mb10 := [2]string{b.file("ten.exe", 10<<20), b.file("ten-b.exe", 10<<20)}
	mb200 := b.file("twohundred.exe", 200<<20)
	mb200v, err := b.variant(mb200, "twohundred-v2.exe")
	if err != nil {
		return err
	}

	if err := b.agentRounds(rounds); err != nil {
		return err
	}
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
	if err := b.deliver(b.config("single", []*simnode{fast}, big[0])); err != nil {
		return err
	}
	if err := b.deliver(b.config("size", []*simnode{sim}, mb10[0])); err != nil {
		return err
	}

	// sftp -b against swdt stage+swap (each run a different file than
	// the node has) and a re-run with nothing changed, interleaved.
	fmt.Fprintln(os.Stderr, "bench: loopback, sftp -b / swdt stage+swap / re-run")
	var sftpT, swapT, rerunT series
	var swapRSS rssSeries
	cur := big[0]
	if _, err := b.swdt(b.config("single", []*simnode{fast}, cur), "--settle", "0"); err != nil {
		return err
	}
	for round := range rounds {
		for i := range 3 {
			switch (i + round) % 3 {
			case 0:
				d, err := b.sftpPut(fast, big[1], "/C:/bench-baseline.bin")
				if err != nil {
					return err
				}
				sftpT = append(sftpT, d)
			case 1:
				next := big[0]
				if cur == next {
					next = big[1]
				}
				r, err := b.swdt(b.config("single", []*simnode{fast}, next), "--settle", "0")
				if err != nil {
					return err
				}
				if r.action != "updated" {
					return fmt.Errorf("stage+swap: action %s, want updated", r.action)
				}
				cur = next
				swapT, swapRSS = append(swapT, r.wall), append(swapRSS, r.maxRSSKB)
			case 2:
				r, err := b.swdt(b.config("single", []*simnode{fast}, cur), "--settle", "0")
				if err != nil {
					return err
				}
				if r.action != "unchanged" {
					return fmt.Errorf("re-run: action %s, want unchanged", r.action)
				}
				rerunT = append(rerunT, r.wall)
			}
		}
	}
	b.add(fmt.Sprintf("loopback: sftp -b put %d MB", b.o.bigMB), sftpT.String(), "")
	b.add(fmt.Sprintf("loopback: swdt stage+swap %d MB (instant services)", b.o.bigMB), swapT.String()+"; peak RSS "+swapRSS.String(), "")
	b.add("loopback: ratio stage+swap / sftp (medians)", ratio(swapT.med(), sftpT.med()), "<= 1.10")
	b.add("loopback: swdt re-run, nothing changed", rerunT.String(), "")
	b.add("loopback: ratio re-run / sftp (medians)", ratio(rerunT.med(), sftpT.med()), "< 0.05")

	if err := b.rebuildLoop(fast, [2]string{big[0], bigV}); err != nil {
		return err
	}

	fmt.Fprintln(os.Stderr, "bench: downtime and peak RSS")
	// Downtime with simnode's 200 ms stop and 200 ms start; a 10 MB and
	// a 200 MB binary alternate with another one of their size (200 MB:
	// its rebuild), so that every run is a change.
	type sized struct {
		name  string
		files [2]string
		flags []string
		want  string
		// seed is pushed first, not measured (with flags and --force).
		seed string
	}
	for _, c := range []sized{
		{"10 MB", mb10, nil, "plain", ""},
		{"200 MB, defaults (loopback: as it is)", [2]string{mb200, mb200v}, nil, "plain", ""},
		// A fixed level: on loopback auto sends files as they are. --force
		// and one file, which the node has; no patch.
		{"200 MB, compressed (--compress 1 --delta=false --force)", [2]string{mb200, mb200}, []string{"--compress", "1", "--delta=false", "--force"}, "compressed", ""},
		// Against the previous 200 MB, which the store keeps (the seed
		// run, compressed, kept it).
		{"200 MB, as a patch (--compress 1)", [2]string{mb200v, mb200}, []string{"--compress", "1"}, "patch", mb200},
	} {
		var wall, down series
		var rss rssSeries
		var services, how []string
		cache := filepath.Join(b.dir, "cache-sized")
		if c.seed != "" {
			if _, err := b.swdtIn(cache, b.config("size", []*simnode{sim}, c.seed), append([]string{"--settle", "0", "--force"}, c.flags...)...); err != nil {
				return err
			}
		}
		for round := range rounds {
			r, err := b.swdtIn(cache, b.config("size", []*simnode{sim}, c.files[round%2]), append([]string{"--settle", "0"}, c.flags...)...)
			if err != nil {
				return err
			}
			if r.transfer != c.want && c.want != "plain" {
				return fmt.Errorf("%s: transfer %s, want %s", c.name, r.transfer, c.want)
			}
			how = append(how, r.transfer)
			wall, down, rss = append(wall, r.wall), append(down, r.downtime), append(rss, r.maxRSSKB)
			services = r.services
		}
		b.add("stage+swap "+c.name+", 200 ms services", wall.String()+"; sent "+counts(how), "")
		b.add("downtime per swap, "+c.name, fmt.Sprintf("min %s, median %s; every stopped service, last run: %s",
			ms(down.min()), ms(down.med()), strings.Join(services, ", ")), "< 2 s (simnode stop 200 ms + start 200 ms)")
		goal := "< 64 MiB"
		if c.want == "patch" {
			goal = "< 256 MiB"
		}
		b.add("peak RSS of the swdt process, "+c.name, rss.String(), goal)
	}
	return nil
}

// loopOnly is the rebuild loop of loopback alone (-only loop).
func (b *bench) loopOnly() error {
	big := b.file("big.exe", b.o.bigMB<<20)
	bigV, err := b.variant(big, "big-v2.exe")
	if err != nil {
		return err
	}
	fast, err := b.startSimnode("fast", "--start-delay", "0", "--stop-delay", "0")
	if err != nil {
		return err
	}
	defer fast.stop()
	if err := b.deliver(b.config("single", []*simnode{fast}, big)); err != nil {
		return err
	}
	return b.rebuildLoop(fast, [2]string{big, bigV})
}

// rebuildLoop pushes a binary and its rebuild in turn on loopback with
// the defaults and with --compress off, each with a store that holds
// copies of both builds (warm: a patch could be made) and with an empty
// cache directory every run (cold): the defaults must cost no more than
// the plain path on a fast link.
func (b *bench) rebuildLoop(s *simnode, files [2]string) error {
	fmt.Fprintln(os.Stderr, "bench: loopback rebuild loop, defaults vs --compress off")
	type loop struct {
		name  string
		flags []string
		cold  bool
	}
	loops := []loop{
		{"defaults, store warm", nil, false},
		{"--compress off, store warm", []string{"--compress", "off"}, false},
		{"defaults, store cold", nil, true},
		{"--compress off, store cold", []string{"--compress", "off"}, true},
	}
	cache := func(l loop, round int) string {
		if l.cold {
			return filepath.Join(b.dir, fmt.Sprintf("cold-%d-%s", round, strings.ReplaceAll(l.name, " ", "")))
		}
		return filepath.Join(b.dir, "warm-"+strings.ReplaceAll(l.name, " ", ""))
	}
	// Warm: both builds pushed once with a fixed level, so that the store
	// keeps a copy of each (on loopback auto keeps none).
	cur := files[1]
	for _, l := range loops[:2] {
		for _, f := range files {
			if _, err := b.swdtIn(cache(l, 0), b.config("loop", []*simnode{s}, f), "--settle", "0", "--compress", "1", "--force"); err != nil {
				return err
			}
		}
	}
	wall := map[string]series{}
	rss := map[string]rssSeries{}
	how := map[string][]string{}
	for round := range b.o.rounds {
		for i := range loops {
			l := loops[(i+round)%len(loops)]
			next := files[0]
			if cur == next {
				next = files[1]
			}
			r, err := b.swdtIn(cache(l, round), b.config("loop", []*simnode{s}, next), append([]string{"--settle", "0"}, l.flags...)...)
			if err != nil {
				return err
			}
			if r.action != "updated" {
				return fmt.Errorf("rebuild loop, %s: %s, want updated", l.name, r.action)
			}
			cur = next
			wall[l.name], rss[l.name] = append(wall[l.name], r.wall), append(rss[l.name], r.maxRSSKB)
			// On loopback the defaults send files as they are, unless the
			// link measured 5 ms or more (a loaded machine): counted.
			how[l.name] = append(how[l.name], r.transfer)
		}
	}
	for _, l := range loops {
		b.add(fmt.Sprintf("loopback rebuild loop %d MB, %s", b.o.bigMB, l.name), wall[l.name].String()+"; peak RSS "+rss[l.name].String()+"; sent "+counts(how[l.name]), "")
	}
	for _, store := range []string{"warm", "cold"} {
		d, off := wall["defaults, store "+store], wall["--compress off, store "+store]
		b.add(fmt.Sprintf("loopback rebuild loop, store %s: ratio defaults / --compress off (medians)", store), ratio(d.med(), off.med()), "<= 1.00")
	}
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
		if err := b.fanOut(v.name, v.prefix, v.flags, b.o.nodes); err != nil {
			return err
		}
	}
	if b.o.wideNodes > 0 {
		// A wide fan-out: a small cluster's Windows pool.
		return b.fanOut("200 ms services", "wide", nil, b.o.wideNodes)
	}
	return nil
}

// kubeletBuilds is the -kubelet default: kubelet.exe and kubelet-dev.exe
// in $SWDT_CLUSTER_BIN (the cluster tier's cache of Windows builds of
// kubelet), when both are there.
func kubeletBuilds() string {
	dir := os.Getenv("SWDT_CLUSTER_BIN")
	if dir == "" {
		return ""
	}
	var builds []string
	for _, name := range []string{"kubelet.exe", "kubelet-dev.exe"} {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err != nil {
			return ""
		}
		builds = append(builds, p)
	}
	return strings.Join(builds, ",")
}

// fanOut measures one node against N, simnodes started with flags, and
// the CPU time swdt and the simnodes spent in each run.
func (b *bench) fanOut(name, prefix string, flags []string, nodes int) error {
	fmt.Fprintf(os.Stderr, "bench: %d nodes in parallel, %s\n", nodes, name)
	var sims []*simnode
	defer func() {
		for _, s := range sims {
			s.stop()
		}
	}()
	for i := 0; i < nodes; i++ {
		s, err := b.startSimnode(fmt.Sprintf("%s%d", prefix, i), flags...)
		if err != nil {
			return err
		}
		sims = append(sims, s)
	}
	small := [2]string{b.file(prefix+"-one.exe", 1<<20), b.file(prefix+"-one-b.exe", 1<<20)}
	if err := b.deliver(b.config(prefix+"-many", sims, small[0])); err != nil {
		return err
	}
	run := func(sims []*simnode, config string) (swdtRun, time.Duration, error) {
		before := simnodesCPU(sims)
		r, err := b.swdt(config, "--settle", "0")
		return r, simnodesCPU(sims) - before, err
	}
	// Each round swaps on one node and on all of them, in turn first, a
	// file other than what the nodes hold.
	var one, many series
	var oneCPU, manyCPU, oneSim, manySim series
	for round := range b.o.rounds {
		for i := range 2 {
			all := (i+round)%2 == 1
			f := small[(2*round+i)%2]
			if all {
				r, sim, err := run(sims, b.config(prefix+"-many", sims, f))
				if err != nil {
					return err
				}
				many, manyCPU, manySim = append(many, r.wall), append(manyCPU, r.cpu), append(manySim, sim)
				continue
			}
			r, sim, err := run(sims[:1], b.config(prefix+"-one", sims[:1], f))
			if err != nil {
				return err
			}
			one, oneCPU, oneSim = append(one, r.wall), append(oneCPU, r.cpu), append(oneSim, sim)
		}
	}
	cpu := func(wall, swdt, sim series) string {
		return fmt.Sprintf("%s; CPU medians: swdt %s, simnodes %s (%d cores)", wall, secs(swdt.med()), secs(sim.med()), runtime.NumCPU())
	}
	b.add(fmt.Sprintf("%s: 1 node, 1 MB swap", name), cpu(one, oneCPU, oneSim), "")
	b.add(fmt.Sprintf("%s: %d nodes, 1 MB swap each", name, nodes), cpu(many, manyCPU, manySim), "")
	goal := ""
	if flags == nil && nodes == b.o.nodes {
		goal = "<= 1.5"
	}
	b.add(fmt.Sprintf("%s: ratio %d nodes / 1 node (medians)", name, nodes), ratio(many.med(), one.med()), goal)
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
	fmt.Fprintln(tw, "MEASUREMENT\tVALUE\tGOAL\tLOAD (1 min)")
	for _, f := range b.out {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.name, f.value, f.goal, f.load)
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
	// ops is the agent's work on the node, from its log (started with
	// -v); nil otherwise.
	ops *opLog
}

func (b *bench) startSimnode(name string, flags ...string) (*simnode, error) {
	state := filepath.Join(b.dir, name)
	args := append([]string{"--listen", "127.0.0.1:0", "--state-dir", state, "--authorized-key", b.key + ".pub"}, flags...)
	cmd := exec.Command(b.o.simnode, args...)
	diesWithBench(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &simnode{cmd: cmd, state: state, knownHosts: filepath.Join(state, "known_hosts")}
	cmd.Stderr = io.Discard
	if slices.Contains(flags, "-v") {
		s.ops = newOpLog()
		cmd.Stderr = s.ops
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start simnode: %w", err)
	}
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
	sources := make([]string, len(sims))
	for i := range sources {
		sources[i] = source
	}
	return b.configEach(name, sims, sources)
}

// configEach writes a node file with one kubelet provisioner on every
// simnode, the i-th fed by sources[i].
func (b *bench) configEach(name string, sims []*simnode, sources []string) string {
	var buf bytes.Buffer
	for i, s := range sims {
		source := sources[i]
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
	sftp, err := exec.LookPath("sftp")
	if err != nil {
		return 0, 0, err
	}
	m, err := b.timed(nil, nil, sftp, "-q", "-b", batch, "-i", b.key, "-P", port, "-c", cipher,
		"-o", "UserKnownHostsFile="+knownHosts, "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes",
		user+"@"+host)
	if err != nil {
		return 0, 0, err
	}
	return m.Wall, m.CPU, nil
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
	var stdout bytes.Buffer
	m, err := b.timed(&stdout, nil, b.o.swdt, args...)
	if err != nil {
		return swdtRun{}, err
	}
	var doc kubeDoc
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
		return swdtRun{}, fmt.Errorf("swdt output: %w", err)
	}
	r := doc.run()
	r.wall, r.maxRSSKB, r.cpu = m.Wall, m.MaxRSSKB, m.CPU
	return r, nil
}

// kubeDoc is the -o json document of swdt kubernetes.
type kubeDoc struct {
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

// run is what the document says about the run (no times).
func (doc kubeDoc) run() swdtRun {
	var r swdtRun
	for _, n := range doc.Nodes {
		for _, s := range n.Services {
			r.services = append(r.services, fmt.Sprintf("%s %d ms", s.Name, s.DowntimeMs))
		}
		for _, p := range n.Provisioners {
			r.action, r.transfer, r.bytesSent = p.Action, p.Transfer, p.BytesSent
			r.downtime = max(r.downtime, time.Duration(p.DowntimeMs)*time.Millisecond)
		}
	}
	return r
}

// counts says how many runs sent each way: "4 plain, 1 compressed".
func counts(how []string) string {
	n := map[string]int{}
	var order []string
	for _, h := range how {
		if n[h] == 0 {
			order = append(order, h)
		}
		n[h]++
	}
	var parts []string
	for _, h := range order {
		parts = append(parts, fmt.Sprintf("%d %s", n[h], h))
	}
	return strings.Join(parts, ", ")
}

func mbytes(kb int64) string      { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }
func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
func ms(d time.Duration) string   { return fmt.Sprintf("%d ms", d.Milliseconds()) }
func ratio(a, b time.Duration) string {
	return fmt.Sprintf("%.2fx", a.Seconds()/b.Seconds())
}
