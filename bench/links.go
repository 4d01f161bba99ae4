//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"
)

// links are the shapes pushes are measured on.
var links = []link{
	{name: "LAN", bitsPerSec: 1e9, rtt: time.Millisecond},
	{name: "VPN", bitsPerSec: 100e6, rtt: 20 * time.Millisecond},
	{name: "slow", bitsPerSec: 20e6, rtt: 60 * time.Millisecond},
}

// localRTT is the round trip under which swdt's --compress auto sends
// whole files as they are (pkg/delta); the shaper adds about 1.5 ms to a
// link's own.
const localRTT = 5 * time.Millisecond

// cipher is pinned for OpenSSH's sftp: it would otherwise negotiate
// chacha20-poly1305, which simnode's Go SSH server decrypts several times
// slower than AES-GCM, the cipher swdt's Go client negotiates first.
const cipher = "aes128-gcm@openssh.com"

// buildPE builds ./cmd/swdt for windows/amd64 twice, the second time with
// a small source change (a statement added to one function, through
// go build -overlay so the tree is not touched), as between two builds of
// a developer's tree, and returns the two executables. Both are stripped
// (-s -w) as make build and Kubernetes' own builds strip theirs: Go's
// linker zlib-compresses DWARF, whose line tables change after any code
// change, so an unstripped build neither compresses nor patches well
// (docs/benchmarks.md has that figure too).
func (b *bench) buildPE() (string, string, error) {
	// The statement goes first in currentVersion, whatever it returns.
	const file, anchor = "cmd/swdt/app/version.go", "\nfunc currentVersion() "
	src, err := os.ReadFile(file)
	if err != nil {
		return "", "", fmt.Errorf("the source to change for the second build: %w", err)
	}
	at := bytes.Index(src, []byte(anchor))
	if at < 0 {
		return "", "", fmt.Errorf("%s no longer has %q: change the bench's source edit", file, strings.TrimSpace(anchor))
	}
	eol := at + 1 + bytes.IndexByte(src[at+1:], '\n') + 1 // after the line that opens it
	changed := append(append(append([]byte(nil), src[:eol]...), "\tif len(commit) > 12 {\n\t\tcommit = commit[:12]\n\t}\n"...), src[eol:]...)
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", "", err
	}
	edited := filepath.Join(b.dir, "version.go")
	overlay := filepath.Join(b.dir, "overlay.json")
	ov, err := json.Marshal(map[string]map[string]string{"Replace": {abs: edited}})
	if err != nil {
		return "", "", err
	}
	for p, data := range map[string][]byte{edited: changed, overlay: ov} {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return "", "", fmt.Errorf("the second build's overlay: %w", err)
		}
	}
	var out []string
	for i, extra := range [][]string{nil, {"-overlay", overlay}} {
		p := filepath.Join(b.dir, fmt.Sprintf("swdt-%d.exe", i+1))
		args := append(append([]string{"build", "-trimpath", "-ldflags", "-s -w"}, extra...), "-o", p, "./cmd/swdt")
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64")
		if o, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("build a Windows binary for the link runs: %w: %s", err, o)
		}
		out = append(out, p)
	}
	return out[0], out[1], nil
}

// contender is one way of pushing the file.
type contender struct {
	name string
	// swdt flags; nil: another client (sftp, rsync).
	flags    []string
	transfer string // what swdt must report
	// local is what swdt must report on a link auto takes for a local
	// network (round trip under 5 ms), where it sends files as they are
	// ("": transfer).
	local string
	// rsync: rsync over ssh to Debian's sshd, with these flags.
	rsync []string
}

var contenders = []contender{
	{name: "OpenSSH sftp"},
	{name: "swdt plain", flags: []string{"--compress", "off"}, transfer: "plain"},
	{name: "swdt compressed", flags: []string{"--delta=false"}, transfer: "compressed", local: "plain"},
	{name: "swdt delta (defaults)", flags: []string{}, transfer: "patch", local: "plain"},
	{name: "rsync over ssh (Debian sshd)", rsync: []string{}},
	{name: "rsync -z over ssh (Debian sshd)", rsync: []string{"-z"}},
}

// Round trips each path cannot avoid, as docs/DESIGN.md counts them
// (docs/benchmarks.md derives them); the shaper charges every one of
// them, TCP's handshake included.
const (
	// tripsConnect: TCP's handshake 1; SSH's version strings and KEXINIT
	// 1; the key exchange 1; the userauth service 1; auth "none", which
	// returns the server's methods, 1; the public key's query 1 and its
	// signature 1 (§3.3: a new connection).
	tripsConnect = 7
	// tripsWarm: a rebuild whose patches are small, from the hash cache's
	// record (§8): connect; the agent's check, its channel opened beside
	// the op's, then one round trip (2); the one op, exec and result (2).
	tripsWarm = tripsConnect + 2 + 2
	// tripsWatch: with the connection kept (--watch), a rebuild waits for
	// one round trip (§8).
	tripsWatch = 1
	// tripsFirst: first contact to a node that has never seen swdt
	// (§3.4, §4): connect; the agent: SFTP's start (the channel 1, the
	// subsystem request and INIT sent together 1), the looks at
	// C:\Windows\SysArm32, the agent's paths and its folder, with the
	// folder's MKDIR, at once 1, its upload straight to its path (open,
	// close: 2); the inspect op 2 (its channel opened during the upload);
	// the staged build (open, close: 2); the swap op 2. Nothing is read
	// back.
	tripsFirst = tripsConnect + 2 + 1 + 2 + 2 + 2 + 2
)

// floor is the protocol floor of a path of trips round trips that moves
// n bytes and has the node write a file in write, on a link measured at
// rtt and bitsPerSec: its round trips, plus the bytes at the link's rate
// or the node's write, whichever is longer (the node writes what arrives
// as it arrives: the two overlap, and neither overlaps a round trip's
// wait).
func floor(trips int, n int64, write, rtt time.Duration, bitsPerSec float64) time.Duration {
	wire := time.Duration(float64(n) * 8 / bitsPerSec * float64(time.Second))
	return time.Duration(trips)*rtt + max(wire, write)
}

// floorRows adds a path's floor and the ratio of its times to it.
func (b *bench) floorRows(row string, trips int, n int64, write, rtt time.Duration, bps float64, times series, goal string) {
	fl := floor(trips, n, write, rtt, bps)
	b.add(fmt.Sprintf("%s: floor (%d round trips x %s + max(%s at the rate, the node's write %s))", row, trips, rtt.Round(100*time.Microsecond), size(n), ms(write)), secs(fl), "")
	b.add(fmt.Sprintf("%s: ratio to its floor (medians)", row), ratio(times.med(), fl), goal)
}

// nodeWrite is the median time of writing n bytes to a new file in dir
// (the node's file system): the write no rebuild of an n-byte file can
// avoid.
func nodeWrite(dir string, n int64) (time.Duration, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	p := filepath.Join(dir, "bench-write.tmp")
	defer os.Remove(p)
	var times series
	for range 3 {
		_ = os.Remove(p)
		start := time.Now()
		f, err := os.Create(p)
		if err != nil {
			return 0, err
		}
		for left := n; left > 0; left -= int64(len(buf)) {
			if _, err := f.Write(buf[:min(left, int64(len(buf)))]); err != nil {
				f.Close()
				return 0, err
			}
		}
		if err := f.Close(); err != nil {
			return 0, err
		}
		times = append(times, time.Since(start))
	}
	return times.med(), nil
}

// pusher pushes files to one simnode and one Debian sshd through shapers,
// each push a change (the builds alternate).
type pusher struct {
	b      *bench
	cache  string
	sim    *simnode          // behind the shaper
	direct *simnode          // the same simnode without it, to set up state
	sshd   *sshd             // behind the shaper (addr, knownHosts)
	cur    string            // what the simnode holds
	rcur   map[string]string // what each rsync destination holds
	large  [2]string         // the large rebuild
}

// next is the build of pair that is not cur.
func next(pair [2]string, cur string) string {
	if cur == pair[0] {
		return pair[1]
	}
	return pair[0]
}

// push pushes the build of pair the destination does not hold with c and
// returns its time and the bytes it sent (0 for sftp).
func (p *pusher) push(c contender, pair [2]string, local bool) (time.Duration, int64, string, error) {
	b := p.b
	switch {
	case c.rsync != nil:
		dst := filepath.Join(p.sshd.root, filepath.Base(pair[0])+".rsync")
		f := next(pair, p.rcur[dst])
		d, n, err := b.rsyncPut(p.sshd, f, dst, c.rsync)
		p.rcur[dst] = f
		return d, n, "", err
	case c.flags == nil:
		d, err := b.sftpPut(p.sim, next(pair, p.cur), "/C:/bench-sftp.bin")
		return d, 0, "", err
	}
	f := next(pair, p.cur)
	r, err := b.swdtIn(p.cache, b.config("link", []*simnode{p.sim}, f), append([]string{"--settle", "0"}, c.flags...)...)
	if err != nil {
		return 0, 0, "", err
	}
	p.cur = f
	if r.transfer != c.transfer && (r.transfer != c.local || !local) {
		return 0, 0, "", fmt.Errorf("%s: transfer %s, want %s", c.name, r.transfer, c.transfer)
	}
	return r.wall, r.bytesSent, r.transfer, nil
}

// seed puts f on the simnode (directly, a fixed level, so that swdt's
// store keeps a copy) and on every rsync destination of pair.
func (p *pusher) seed(pair [2]string) error {
	for _, f := range pair {
		if _, err := p.b.swdtIn(p.cache, p.b.config("warm", []*simnode{p.direct}, f), "--settle", "0", "--compress", "1"); err != nil {
			return err
		}
	}
	p.cur = pair[1]
	dst := filepath.Join(p.sshd.root, filepath.Base(pair[0])+".rsync")
	if err := copyFile(pair[1], dst); err != nil {
		return err
	}
	p.rcur[dst] = pair[1]
	return nil
}

// linkRuns pushes the rebuilt binary through each link shape with every
// contender, interleaved in rotated order, rounds times each; on each
// shape also a rebuild swapped by swdt --watch on its kept connection,
// and on the VPN shape a large rebuild.
func (b *bench) linkRuns(rounds int) error {
	fmt.Fprintln(os.Stderr, "bench: building two Windows binaries of ./cmd/swdt")
	v1, v2, err := b.buildPE()
	if err != nil {
		return err
	}
	fi, err := os.Stat(v2)
	if err != nil {
		return err
	}
	large := [2]string{b.file("large.exe", b.o.largeMB<<20), ""}
	if large[1], err = b.variant(large[0], "large-v2.exe"); err != nil {
		return err
	}
	sim, err := b.startSimnode("links", "--start-delay", "0", "--stop-delay", "0")
	if err != nil {
		return err
	}
	defer sim.stop()
	if _, err := os.Stat(sshdPath); err != nil {
		return fmt.Errorf("the rsync rows need Debian's sshd: %s is missing (make test-deps installs openssh-server)", sshdPath)
	}
	if _, err := exec.LookPath("rsync"); err != nil {
		return errors.New("the rsync rows need rsync (make bench installs it when missing)")
	}
	sd, err := b.startSSHD("sshd-links")
	if err != nil {
		return err
	}
	defer sd.stop()
	p := &pusher{b: b, cache: filepath.Join(b.dir, "linkcache"), direct: sim, rcur: map[string]string{}, large: large}
	pair := [2]string{v1, v2}
	if err := b.roundTrips(min(rounds, 3)); err != nil {
		return err
	}
	b.add("link runs: file", fmt.Sprintf("%s, %.1f MB (GOOS=windows build of ./cmd/swdt, stripped; the second build has a statement added to one function)", filepath.Base(v2), float64(fi.Size())/1e6), "")
	for _, l := range links {
		if b.o.shapes != "" && !slices.Contains(strings.Split(b.o.shapes, ","), l.name) {
			continue
		}
		rtt, bps, err := probe(l)
		if err != nil {
			return fmt.Errorf("probe %s: %w", l, err)
		}
		b.add(fmt.Sprintf("%s: shaper measured with plain TCP", l), fmt.Sprintf("RTT %s, %.1f Mbit/s", rtt.Round(100*time.Microsecond), bps/1e6), "")
		sh, err := startShaper(l, sim.addr)
		if err != nil {
			return err
		}
		ssh, err := startShaper(l, sd.addr)
		if err != nil {
			sh.close()
			return err
		}
		err = b.linkShape(p, l, rtt, bps, sh, ssh, sd, pair, fi.Size(), rounds)
		sh.close()
		ssh.close()
		if err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
		}
	}
	return nil
}

// linkShape is linkRuns on one shape.
func (b *bench) linkShape(p *pusher, l link, rtt time.Duration, bps float64, sh, ssh *shaper, sd *sshd, pair [2]string, fileSize int64, rounds int) error {
	kh, err := b.knownHostsVia(p.direct.knownHosts, sh.addr())
	if err != nil {
		return err
	}
	p.sim = &simnode{addr: sh.addr(), knownHosts: kh}
	skh, err := b.knownHostsVia(sd.knownHosts, ssh.addr())
	if err != nil {
		return err
	}
	p.sshd = &sshd{addr: ssh.addr(), user: sd.user, knownHosts: skh, root: sd.root}
	if err := p.seed(pair); err != nil {
		return err
	}
	local := l.rtt < localRTT
	times := map[string]series{}
	sent := map[string][]int64{}
	how := map[string]string{}
	fmt.Fprintf(os.Stderr, "bench: %s\n", l)
	for round := range rounds {
		for i := range contenders {
			c := contenders[(i+round)%len(contenders)]
			d, n, tr, err := p.push(c, pair, local)
			if err != nil {
				return err
			}
			times[c.name], sent[c.name], how[c.name] = append(times[c.name], d), append(sent[c.name], n), tr
		}
	}
	base := times[contenders[0].name].med()
	for _, c := range contenders {
		v := times[c.name].String()
		if n := medianBytes(sent[c.name]); n > 0 {
			v += fmt.Sprintf(", sent %s", size(n))
			if how[c.name] != "" {
				v += " " + how[c.name]
			}
			v += fmt.Sprintf(" (%.1f%% saved)", 100*(1-float64(n)/float64(fileSize)))
		}
		b.add(fmt.Sprintf("%s: %s", l.name, c.name), v, "")
	}
	for _, c := range contenders[1:] {
		goal := ""
		switch {
		case l.name == "VPN" && c.transfer == "patch":
			goal = "<= 0.30"
		case l.name == "VPN" && c.transfer == "compressed":
			goal = "<= 0.60"
		}
		b.add(fmt.Sprintf("%s: ratio %s / sftp (medians)", l.name, c.name), ratio(times[c.name].med(), base), goal)
	}
	write, err := nodeWrite(p.direct.state, fileSize)
	if err != nil {
		return fmt.Errorf("the node's write: %w", err)
	}
	if !local {
		goal := ""
		if l.name == "VPN" {
			goal = "<= 1.30"
		}
		patch := "swdt delta (defaults)"
		b.floorRows(l.name+", warm rebuild (patch)", tripsWarm, medianBytes(sent[patch]), write, rtt, bps, times[patch], goal)
	}

	// swdt --watch: the connection is kept; each rebuild is the patch and
	// one op.
	w, n, err := b.watchRuns(p, pair, rounds)
	if err != nil {
		return err
	}
	b.add(fmt.Sprintf("%s: swdt --watch, rebuild written to swapped (--debounce 10ms)", l.name), fmt.Sprintf("%s, sent %s", w, size(n)), "")
	if !local {
		goal := ""
		if l.name == "VPN" {
			goal = "<= 2.00"
		}
		b.floorRows(l.name+", --watch rebuild", tripsWatch, n, write, rtt, bps, w, goal)
	}
	if l.name != "VPN" {
		return nil
	}
	if err := b.firstContact(l, rtt, bps, pair[1], rounds); err != nil {
		return err
	}
	if b.o.kubelet != "" {
		if err := b.kubeletBuild(p, l, rtt, bps, rounds); err != nil {
			return err
		}
	}

	// A large rebuild: b.o.largeMB of random bytes with a few changed in
	// the middle.
	fmt.Fprintf(os.Stderr, "bench: %s, %d MB rebuild\n", l, b.o.largeMB)
	large := p.large
	if err := p.seed(large); err != nil {
		return err
	}
	bigs := []contender{contenders[3], contenders[4], contenders[5]}
	ltimes := map[string]series{}
	lsent := map[string][]int64{}
	for round := range rounds {
		for i := range bigs {
			c := bigs[(i+round)%len(bigs)]
			d, n, _, err := p.push(c, large, false)
			if err != nil {
				return err
			}
			ltimes[c.name], lsent[c.name] = append(ltimes[c.name], d), append(lsent[c.name], n)
		}
	}
	for _, c := range bigs {
		b.add(fmt.Sprintf("%s, %d MB rebuild: %s", l.name, b.o.largeMB, c.name), fmt.Sprintf("%s, sent %s", ltimes[c.name], size(medianBytes(lsent[c.name]))), "")
	}
	patch := bigs[0].name
	lwrite, err := nodeWrite(p.direct.state, int64(b.o.largeMB)<<20)
	if err != nil {
		return fmt.Errorf("the node's write: %w", err)
	}
	b.floorRows(fmt.Sprintf("%s, %d MB warm rebuild (patch)", l.name, b.o.largeMB), tripsWarm, medianBytes(lsent[patch]), lwrite, rtt, bps, ltimes[patch], "<= 1.50")
	b.add(fmt.Sprintf("%s, %d MB rebuild: ratio patch / rsync (medians)", l.name, b.o.largeMB), ratio(ltimes[patch].med(), ltimes[bigs[1].name].med()), "")
	// Back to the builds for the next shape.
	return p.seed(pair)
}

// watchIdle is how long each --watch round waits after the run before it
// changes the source: less than any build takes, longer than what the
// transport would trust without hearing from the node (a second).
const watchIdle = 2 * time.Second

// watchRuns starts swdt kubernetes --watch on the pusher's simnode,
// then, rounds times, waits watchIdle, renames the other build over the
// watched source and times until swdt reports the swap. It returns the
// times and the median bytes sent.
func (b *bench) watchRuns(p *pusher, pair [2]string, rounds int) (series, int64, error) {
	watched := filepath.Join(b.dir, "watched.exe")
	if err := copyFile(p.cur, watched); err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(b.o.swdt, "kubernetes", "-c", b.config("watch", []*simnode{p.sim}, watched), "-o", "json",
		"--cache-dir", p.cache, "--watch", "--debounce", "10ms", "--settle", "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	dec := json.NewDecoder(stdout)
	var doc kubeDoc
	if err := dec.Decode(&doc); err != nil {
		return nil, 0, fmt.Errorf("swdt --watch, first run: %w\n%s", err, stderr.String())
	}
	var times series
	var sent []int64
	for range rounds {
		f := next(pair, p.cur)
		tmp := watched + ".tmp"
		if err := copyFile(f, tmp); err != nil {
			return nil, 0, err
		}
		// A developer's next build comes seconds after the last swap, not
		// at once: what swdt holds for it must outlast that.
		time.Sleep(watchIdle)
		b.quiet()
		start := time.Now()
		if err := os.Rename(tmp, watched); err != nil {
			return nil, 0, err
		}
		var doc kubeDoc
		if err := dec.Decode(&doc); err != nil {
			return nil, 0, fmt.Errorf("swdt --watch: %w\n%s", err, stderr.String())
		}
		times = append(times, time.Since(start))
		r := doc.run()
		if r.action != "updated" {
			return nil, 0, fmt.Errorf("swdt --watch: action %s, want updated\n%s", r.action, stderr.String())
		}
		p.cur = f
		sent = append(sent, r.bytesSent)
	}
	return times, medianBytes(sent), nil
}

func medianBytes(ns []int64) int64 {
	if len(ns) == 0 {
		return 0
	}
	s := slices.Clone(ns)
	slices.Sort(s)
	return s[len(s)/2]
}

// rsyncPut times rsync putting local to dst on the sshd, over ssh with
// the cipher pinned, and returns the bytes it sent (--stats).
func (b *bench) rsyncPut(s *sshd, local, dst string, flags []string) (time.Duration, int64, error) {
	host, port, _ := strings.Cut(s.addr, ":")
	rsync, err := exec.LookPath("rsync")
	if err != nil {
		return 0, 0, err
	}
	sshCmd := fmt.Sprintf("ssh -p %s -i %s -c %s -o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes -o BatchMode=yes",
		port, b.key, cipher, s.knownHosts)
	args := append(append([]string{"--stats", "-e", sshCmd}, flags...), local, s.user+"@"+host+":"+dst)
	var out bytes.Buffer
	m, err := b.timed(&out, nil, rsync, args...)
	if err != nil {
		return 0, 0, err
	}
	var n int64
	for _, line := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "Total bytes sent: "); ok {
			n, _ = strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(v), ",", ""), 10, 64)
		}
	}
	return m.Wall, n, nil
}

func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

// knownHostsVia writes a known_hosts file that names the host key of
// knownHosts at addr (a shaper in front of its server).
func (b *bench) knownHostsVia(knownHosts, addr string) (string, error) {
	raw, err := os.ReadFile(knownHosts)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		_, rest, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		out.WriteString(knownhosts.Normalize(addr) + " " + rest + "\n")
	}
	p := filepath.Join(b.dir, "known_hosts_"+strings.ReplaceAll(addr, ":", "_"))
	return p, os.WriteFile(p, []byte(out.String()), 0o600)
}

// size is n bytes in kB or MB.
func size(n int64) string {
	if n < 1e6 {
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
