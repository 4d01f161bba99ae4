//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// firstContact times, rounds times on a new simnode behind a shaper of
// l each round, swdt kubernetes pushing build to a node that has never
// seen swdt (a new cache directory: the agent is uploaded, nothing is
// known of the node) against OpenSSH's sftp -b putting the same build to
// the same node, interleaved; and the floor of that first contact.
func (b *bench) firstContact(l link, rtt time.Duration, bps float64, build string, rounds int) error {
	fmt.Fprintf(os.Stderr, "bench: %s, first contact\n", l)
	fi, err := os.Stat(build)
	if err != nil {
		return err
	}
	var swdtT, sftpT series
	var sent []int64
	var how []string
	var agent int64
	var write time.Duration
	for round := range rounds {
		s, err := b.startSimnode(fmt.Sprintf("first-%s-%d", l.name, round), "--start-delay", "0", "--stop-delay", "0")
		if err != nil {
			return err
		}
		err = func() error {
			defer os.RemoveAll(s.state)
			defer s.stop()
			sh, err := startShaper(l, s.addr)
			if err != nil {
				return err
			}
			defer sh.close()
			kh, err := b.knownHostsVia(s.knownHosts, sh.addr())
			if err != nil {
				return err
			}
			node := []*simnode{{addr: sh.addr(), knownHosts: kh}}
			for i := range 2 {
				if (i+round)%2 == 0 {
					d, err := b.sftpPut(node[0], build, "/C:/first-sftp.bin")
					if err != nil {
						return err
					}
					sftpT = append(sftpT, d)
					continue
				}
				r, err := b.swdtIn(filepath.Join(b.dir, fmt.Sprintf("first-cache-%s-%d", l.name, round)), b.config("first", node, build), "--settle", "0")
				if err != nil {
					return err
				}
				if r.action != "updated" {
					return fmt.Errorf("first contact: action %s, want updated", r.action)
				}
				swdtT, sent, how = append(swdtT, r.wall), append(sent, r.bytesSent), append(how, r.transfer)
			}
			if agent == 0 {
				agent = agentSize(s)
				if write, err = nodeWrite(s.state, fi.Size()); err != nil {
					return fmt.Errorf("the node's write: %w", err)
				}
			}
			return nil
		}()
		if err != nil {
			return fmt.Errorf("first contact: %w", err)
		}
	}
	row := l.name + ", first contact"
	b.add(row+": OpenSSH sftp -b put of the build", sftpT.String(), "")
	b.add(row+": swdt kubernetes (agent upload included)", fmt.Sprintf("%s, sent the build %s (%s) and the agent %s", swdtT, size(medianBytes(sent)), counts(how), size(agent)), "")
	b.add(row+": ratio swdt / sftp (medians)", ratio(swdtT.med(), sftpT.med()), "<= 1.50")
	// The agent goes up (§3.4) before the build.
	b.floorRows(row, tripsFirst, agent+medianBytes(sent), write, rtt, bps, swdtT, "")
	return nil
}

// agentSize is the size of the agent swdt left on simnode s (0: none).
func agentSize(s *simnode) int64 {
	entries, _ := os.ReadDir(filepath.Join(s.state, "fs", "C", "Program Files", "swdt"))
	for _, e := range entries {
		if info, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), "swdt-agent-") {
			return info.Size()
		}
	}
	return 0
}

// kubeletBuild times a kubelet build and its rebuild (b.o.kubelet: two
// Windows builds of kubelet.exe) pushed as a developer pushes them
// straight from a build: the first build deployed once with the
// defaults, a new cache directory (nothing seeded), then every round the
// other build written over the source, as a build writes its output, and
// pushed with the defaults; OpenSSH's sftp -b putting the same build,
// interleaved, as a reference; and the floor of a warm rebuild.
func (b *bench) kubeletBuild(p *pusher, l link, rtt time.Duration, bps float64, rounds int) error {
	builds := strings.Split(b.o.kubelet, ",")
	if len(builds) != 2 {
		return fmt.Errorf("-kubelet %q: want two builds, comma-separated", b.o.kubelet)
	}
	fi, err := os.Stat(builds[0])
	if err != nil {
		return fmt.Errorf("-kubelet: %w", err)
	}
	fmt.Fprintf(os.Stderr, "bench: %s, a kubelet build straight from a build\n", l)
	src := filepath.Join(b.dir, "build", "kubelet.exe")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		return err
	}
	cache := filepath.Join(b.dir, "kubelet-cache")
	config := b.config("kubelet", []*simnode{p.sim}, src)
	if err := copyFile(builds[0], src); err != nil {
		return err
	}
	if _, err := b.swdtIn(cache, config, "--settle", "0"); err != nil {
		return err
	}
	cur := builds[0]
	var swdtT, sftpT series
	var rss rssSeries
	var sent []int64
	var how []string
	for round := range rounds {
		nb := builds[0]
		if cur == nb {
			nb = builds[1]
		}
		for i := range 2 {
			if (i+round)%2 == 0 {
				d, err := b.sftpPut(p.sim, nb, "/C:/kubelet-sftp.bin")
				if err != nil {
					return err
				}
				sftpT = append(sftpT, d)
				continue
			}
			// The build writes its output: a new file, its hash unknown.
			if err := copyFile(nb, src); err != nil {
				return err
			}
			r, err := b.swdtIn(cache, config, "--settle", "0")
			if err != nil {
				return err
			}
			if r.action != "updated" {
				return fmt.Errorf("kubelet build: action %s, want updated", r.action)
			}
			swdtT, rss, sent, how = append(swdtT, r.wall), append(rss, r.maxRSSKB), append(sent, r.bytesSent), append(how, r.transfer)
		}
		cur = nb
	}
	write, err := nodeWrite(p.direct.state, fi.Size())
	if err != nil {
		return fmt.Errorf("the node's write: %w", err)
	}
	row := fmt.Sprintf("%s, kubelet build straight from a build (%.1f MB)", l.name, float64(fi.Size())/1e6)
	b.add(row+": OpenSSH sftp -b put", sftpT.String(), "")
	b.add(row+": swdt defaults", fmt.Sprintf("%s, sent %s (%s); peak RSS %s", swdtT, size(medianBytes(sent)), counts(how), rss), "")
	b.add(row+": ratio swdt / sftp (medians)", ratio(swdtT.med(), sftpT.med()), "")
	b.floorRows(row, tripsWarm, medianBytes(sent), write, rtt, bps, swdtT, "")
	return nil
}

// tripsLink is the shape the bench counts a path's round trips on: a
// round trip long enough that the local work of a run is a small part of
// one, at a rate that makes its bytes nearly free.
var tripsLink = link{name: "long RTT", bitsPerSec: 10e9, rtt: 200 * time.Millisecond}

// roundTrips counts the round trips the code pays on each path, to set
// beside the floors' counts: through tripsLink, with a 1 MB file and its
// rebuild (a few bytes changed), so that local work is small, a first
// contact (one run, a new simnode and cache) and OpenSSH's sftp -b
// putting the same file to the same node, a warm rebuild and a --watch
// rebuild (rounds each), each time divided by the round trip (the bytes
// taken off; what is left of local work counts as a part of a trip).
func (b *bench) roundTrips(rounds int) error {
	fmt.Fprintf(os.Stderr, "bench: round trips through %s\n", tripsLink)
	one := b.file("trips.exe", 1<<20)
	v, err := b.variant(one, "trips-v2.exe")
	if err != nil {
		return err
	}
	pair := [2]string{one, v}
	sim, err := b.startSimnode("trips", "--start-delay", "0", "--stop-delay", "0")
	if err != nil {
		return err
	}
	defer sim.stop()
	sh, err := startShaper(tripsLink, sim.addr)
	if err != nil {
		return err
	}
	defer sh.close()
	kh, err := b.knownHostsVia(sim.knownHosts, sh.addr())
	if err != nil {
		return err
	}
	node := &simnode{addr: sh.addr(), knownHosts: kh}
	cache := filepath.Join(b.dir, "trips-cache")
	trips := func(d time.Duration, n int64) string {
		wire := time.Duration(float64(n) * 8 / tripsLink.bitsPerSec * float64(time.Second))
		return fmt.Sprintf("%.1f", float64(d-wire)/float64(tripsLink.rtt))
	}
	first, err := b.swdtIn(cache, b.config("trips", []*simnode{node}, pair[0]), "--settle", "0")
	if err != nil {
		return err
	}
	agent := agentSize(sim)
	b.add(fmt.Sprintf("round trips, %s: first contact of a 1 MB build, one run", tripsLink), fmt.Sprintf("%s (%s; the floor counts %d)", trips(first.wall, agent+first.bytesSent), secs(first.wall), tripsFirst), "")
	sftp, err := b.sftpPut(node, pair[0], "/C:/trips-sftp.bin")
	if err != nil {
		return err
	}
	b.add(fmt.Sprintf("round trips, %s: OpenSSH sftp -b put of the same file, one run", tripsLink), fmt.Sprintf("%s (%s)", trips(sftp, 1<<20), secs(sftp)), "")
	// The store keeps a copy of both builds (a fixed level); then each
	// run is a warm rebuild with the defaults.
	if _, err := b.swdtIn(cache, b.config("trips", []*simnode{node}, pair[1]), "--settle", "0", "--compress", "1"); err != nil {
		return err
	}
	if _, err := b.swdtIn(cache, b.config("trips", []*simnode{node}, pair[0]), "--settle", "0", "--compress", "1"); err != nil {
		return err
	}
	p := &pusher{b: b, cache: cache, sim: node, cur: pair[0]}
	var warm series
	var sent []int64
	for range rounds {
		f := next(pair, p.cur)
		r, err := b.swdtIn(cache, b.config("trips", []*simnode{node}, f), "--settle", "0")
		if err != nil {
			return err
		}
		if r.transfer != "patch" {
			return fmt.Errorf("round trips, warm rebuild: sent %s, want a patch", r.transfer)
		}
		p.cur = f
		warm, sent = append(warm, r.wall), append(sent, r.bytesSent)
	}
	b.add(fmt.Sprintf("round trips, %s: warm rebuild", tripsLink), fmt.Sprintf("%s (%s; the floor counts %d)", trips(warm.med(), medianBytes(sent)), warm, tripsWarm), "")
	w, n, err := b.watchRuns(p, pair, rounds)
	if err != nil {
		return err
	}
	b.add(fmt.Sprintf("round trips, %s: --watch rebuild", tripsLink), fmt.Sprintf("%s (%s; the floor counts %d)", trips(w.med(), n), w, tripsWatch), "")
	return nil
}
