//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	const file, anchor = "cmd/swdt/app/version.go", "func currentVersion() versionInfo {\n"
	src, err := os.ReadFile(file)
	if err != nil {
		return "", "", fmt.Errorf("the source to change for the second build: %w", err)
	}
	if !bytes.Contains(src, []byte(anchor)) {
		return "", "", fmt.Errorf("%s no longer has %q: change the bench's source edit", file, strings.TrimSpace(anchor))
	}
	changed := bytes.Replace(src, []byte(anchor), []byte(anchor+"\tif len(commit) > 12 {\n\t\tcommit = commit[:12]\n\t}\n"), 1)
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
	// swdt flags; nil: OpenSSH sftp.
	flags    []string
	transfer string // what swdt must report
	// local is what swdt must report on a link auto takes for a local
	// network (round trip under 5 ms), where it sends files as they are
	// ("": transfer).
	local string
}

var contenders = []contender{
	{name: "OpenSSH sftp"},
	{name: "swdt plain", flags: []string{"--compress", "off"}, transfer: "plain"},
	{name: "swdt compressed", flags: []string{"--delta=false"}, transfer: "compressed", local: "plain"},
	{name: "swdt delta (defaults)", flags: []string{}, transfer: "patch", local: "plain"},
}

// linkRuns pushes the rebuilt binary through each link shape with every
// contender, interleaved in rotated order, rounds times each.
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
	sim, err := b.startSimnode("links", "--start-delay", "0", "--stop-delay", "0")
	if err != nil {
		return err
	}
	defer sim.stop()
	cache := filepath.Join(b.dir, "linkcache")
	// Deliver the agent and keep both builds in swdt's store, so that
	// every measured swdt run finds a copy of what the node holds (a
	// fixed level: on loopback auto would send them as they are, and
	// keep nothing).
	cur := v2
	for _, p := range []string{v1, v2} {
		if _, err := b.swdtIn(cache, b.config("warm", []*simnode{sim}, p), "--settle", "0", "--compress", "1"); err != nil {
			return err
		}
	}
	b.add("link runs: file", fmt.Sprintf("%s, %.1f MB (GOOS=windows build of ./cmd/swdt, stripped; the second build has a statement added to one function)", filepath.Base(v2), float64(fi.Size())/1e6), "")
	for _, l := range links {
		rtt, bps, err := probe(l)
		if err != nil {
			return fmt.Errorf("probe %s: %w", l, err)
		}
		b.add(fmt.Sprintf("%s: shaper measured with plain TCP", l), fmt.Sprintf("RTT %s, %.1f Mbit/s", rtt.Round(100*time.Microsecond), bps/1e6), "")
		sh, err := startShaper(l, sim.addr)
		if err != nil {
			return err
		}
		kh, err := b.knownHostsVia(sim, sh.addr())
		if err != nil {
			sh.close()
			return err
		}
		via := &simnode{addr: sh.addr(), knownHosts: kh}
		times := map[string][]time.Duration{}
		sent := map[string]int64{}
		how := map[string]string{}
		fmt.Fprintf(os.Stderr, "bench: %s\n", l)
		for round := range rounds {
			for i := range contenders {
				c := contenders[(i+round)%len(contenders)]
				next := v1
				if cur == v1 {
					next = v2
				}
				if c.flags == nil {
					d, err := b.sftpPut(via, next, "/C:/bench-sftp.bin")
					if err != nil {
						sh.close()
						return err
					}
					times[c.name] = append(times[c.name], d)
					continue
				}
				args := append([]string{"--settle", "0"}, c.flags...)
				r, err := b.swdtIn(cache, b.config("link", []*simnode{via}, next), args...)
				if err != nil {
					sh.close()
					return err
				}
				cur = next
				if r.transfer != c.transfer && (r.transfer != c.local || l.rtt >= localRTT) {
					sh.close()
					return fmt.Errorf("%s on %s: transfer %s, want %s", c.name, l.name, r.transfer, c.transfer)
				}
				how[c.name] = r.transfer
				times[c.name] = append(times[c.name], r.wall)
				sent[c.name] = r.bytesSent
			}
		}
		sh.close()
		base := median(times[contenders[0].name])
		for _, c := range contenders {
			ts := times[c.name]
			v := fmt.Sprintf("min %s, median %s", secs(slices.Min(ts)), secs(median(ts)))
			if c.flags != nil {
				v += fmt.Sprintf(", %s sent %s (%.1f%% saved)", size(sent[c.name]), how[c.name], 100*(1-float64(sent[c.name])/float64(fi.Size())))
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
			b.add(fmt.Sprintf("%s: ratio %s / sftp (medians)", l.name, c.name), ratio(median(times[c.name]), base), goal)
		}
	}
	return nil
}

// knownHostsVia writes a known_hosts file that names s's host key at addr
// (a shaper in front of it).
func (b *bench) knownHostsVia(s *simnode, addr string) (string, error) {
	raw, err := os.ReadFile(s.knownHosts)
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
