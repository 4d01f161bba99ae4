//go:build linux

package main

import (
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

// cipher is pinned for OpenSSH's sftp: it would otherwise negotiate
// chacha20-poly1305, which simnode's Go SSH server decrypts several times
// slower than AES-GCM, the cipher swdt's Go client negotiates first.
const cipher = "aes128-gcm@openssh.com"

// buildPE builds ./cmd/swdt for windows/amd64 twice, the second time with
// a different version string (a small change, as between two builds of
// a developer's tree), and returns the two executables.
func (b *bench) buildPE() (string, string, error) {
	var out []string
	for i, v := range []string{"v0.0.0-bench-one", "v0.0.0-bench-second-build"} {
		p := filepath.Join(b.dir, fmt.Sprintf("swdt-%d.exe", i+1))
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-X sigs.k8s.io/swdt/cmd/swdt/app.version="+v, "-o", p, "./cmd/swdt")
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
}

var contenders = []contender{
	{name: "OpenSSH sftp"},
	{name: "swdt plain", flags: []string{"--compress", "off"}, transfer: "plain"},
	{name: "swdt compressed", flags: []string{"--delta=false"}, transfer: "compressed"},
	{name: "swdt delta (defaults)", flags: []string{}, transfer: "patch"},
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
	// every measured swdt run finds a copy of what the node holds.
	cur := v2
	for _, p := range []string{v1, v2} {
		if _, err := b.swdtIn(cache, b.config("warm", []*simnode{sim}, p), "--settle", "0"); err != nil {
			return err
		}
	}
	b.add("link runs: file", fmt.Sprintf("%s, %.1f MB (GOOS=windows build of ./cmd/swdt; the second build differs by its version string)", filepath.Base(v2), float64(fi.Size())/1e6), "")
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
				if r.transfer != c.transfer {
					sh.close()
					return fmt.Errorf("%s on %s: transfer %s, want %s", c.name, l.name, r.transfer, c.transfer)
				}
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
				v += fmt.Sprintf(", %.1f MB sent (%.0f%% saved)", float64(sent[c.name])/1e6, 100*(1-float64(sent[c.name])/float64(fi.Size())))
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
