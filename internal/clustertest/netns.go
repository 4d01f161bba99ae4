package clustertest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Network is a LAN of separate machines on this host, so that 127.0.0.1
// means what it means on a real network: the control plane and the node
// each run in a network namespace of their own, joined by veth pairs to a
// bridge in a third ("lan"), with the test process (swdt, "the laptop")
// in the root namespace on the same LAN. The addresses are ours, in a
// private /24 chosen per network; the root namespace gets one veth with
// one address and no other change (no forwarding, no routes but the
// LAN's). Everything is removed when the test ends; a crashed run leaves
// namespaces of unique names, whose subnet the next run does not reuse.
type Network struct {
	// LAN, CP and Node are the namespaces' names.
	LAN, CP, Node string
	// Laptop, CPAddr and NodeAddr are the machines' addresses.
	Laptop, CPAddr, NodeAddr net.IP

	hostIf string
	lock   *os.File
}

// NetworkSkip fails (CI=true) or skips the test when network namespaces
// cannot be made here: not root, or no iproute2.
func NetworkSkip(t testing.TB) {
	t.Helper()
	msg := ""
	if runtime.GOOS != "linux" {
		msg = "network namespaces are Linux's"
	} else if _, err := exec.LookPath("ip"); err != nil {
		msg = "iproute2's ip is not installed (apt-get install iproute2)"
	} else if os.Geteuid() != 0 {
		msg = "network namespaces need root"
	}
	if msg == "" {
		return
	}
	msg = "separate machines (network namespaces): " + msg
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// StartNetwork makes a LAN of three machines for the duration of the
// test: the laptop (this process, .1), the control plane (.2) and the
// node (.3).
func StartNetwork(t testing.TB) *Network {
	t.Helper()
	NetworkSkip(t)
	id := make([]byte, 3)
	if _, err := rand.Read(id); err != nil {
		t.Fatal(err)
	}
	tag := hex.EncodeToString(id)
	n := &Network{LAN: "swdt-" + tag + "-lan", CP: "swdt-" + tag + "-cp", Node: "swdt-" + tag + "-node", hostIf: "swdt" + tag}
	subnet, lock, err := claimSubnet()
	if err != nil {
		t.Fatal(err)
	}
	n.lock = lock
	n.Laptop, n.CPAddr, n.NodeAddr = host(subnet, 1), host(subnet, 2), host(subnet, 3)
	t.Cleanup(n.remove)
	if err := n.make(); err != nil {
		if os.Getenv("CI") != "true" && strings.Contains(err.Error(), "Operation not permitted") {
			t.Skip("separate machines (network namespaces): " + err.Error())
		}
		t.Fatal(err)
	}
	return n
}

func (n *Network) make() error {
	steps := [][]string{
		{"netns", "add", n.LAN}, {"netns", "add", n.CP}, {"netns", "add", n.Node},
		{"-n", n.LAN, "link", "set", "lo", "up"},
		{"-n", n.LAN, "link", "add", "br0", "type", "bridge"},
		{"-n", n.LAN, "link", "set", "br0", "up"},
		// The laptop: a veth from the root namespace.
		{"link", "add", n.hostIf, "type", "veth", "peer", "name", "laptop", "netns", n.LAN},
		{"-n", n.LAN, "link", "set", "laptop", "master", "br0", "up"},
		{"addr", "add", n.Laptop.String() + "/24", "dev", n.hostIf},
		{"link", "set", n.hostIf, "up"},
	}
	for _, m := range []struct {
		ns, port string
		addr     net.IP
	}{{n.CP, "cp", n.CPAddr}, {n.Node, "node", n.NodeAddr}} {
		steps = append(steps,
			[]string{"-n", m.ns, "link", "set", "lo", "up"},
			[]string{"-n", n.LAN, "link", "add", m.port, "type", "veth", "peer", "name", "eth0", "netns", m.ns},
			[]string{"-n", n.LAN, "link", "set", m.port, "master", "br0", "up"},
			[]string{"-n", m.ns, "addr", "add", m.addr.String() + "/24", "dev", "eth0"},
			[]string{"-n", m.ns, "link", "set", "eth0", "up"},
		)
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// remove deletes the namespaces; the veths go with them (the laptop's
// with its peer in the LAN).
func (n *Network) remove() {
	for _, ns := range []string{n.Node, n.CP, n.LAN} {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	_ = exec.Command("ip", "link", "del", n.hostIf).Run()
	if n.lock != nil {
		n.lock.Close()
	}
}

// Command is name with args run on the machine of namespace ns
// (ip netns exec), ended with the test binary.
func (n *Network) Command(ns, name string, args ...string) *exec.Cmd {
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
	cmd.SysProcAttr = dieWithParent()
	return cmd
}

// claimSubnet picks a /24 in 10.128.0.0/9 that no route of the root
// namespace covers and that no other test holds (an flock on a file named
// after it, released when the process ends, even by a crash).
func claimSubnet() (*net.IPNet, *os.File, error) {
	out, err := exec.Command("ip", "-4", "-o", "route", "show", "table", "all").Output()
	if err != nil {
		return nil, nil, fmt.Errorf("ip route: %w", err)
	}
	var used []*net.IPNet
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for _, w := range f {
			if _, nw, err := net.ParseCIDR(w); err == nil {
				used = append(used, nw)
			} else if ip := net.ParseIP(w); ip != nil && ip.To4() != nil {
				used = append(used, &net.IPNet{IP: ip, Mask: net.CIDRMask(32, 32)})
			}
		}
	}
	dir := filepath.Join(os.TempDir(), "swdt-netns-locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	for range 64 {
		r, err := rand.Int(rand.Reader, big.NewInt(1<<15))
		if err != nil {
			return nil, nil, err
		}
		v := r.Int64()
		subnet := &net.IPNet{IP: net.IPv4(10, byte(128+v>>8), byte(v), 0).To4(), Mask: net.CIDRMask(24, 32)}
		if overlaps(subnet, used) {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, subnet.IP.String()), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return nil, nil, err
		}
		if !tryLock(f) {
			f.Close()
			continue
		}
		return subnet, f, nil
	}
	return nil, nil, fmt.Errorf("no free /24 in 10.128.0.0/9 for a test network")
}

func overlaps(a *net.IPNet, used []*net.IPNet) bool {
	for _, u := range used {
		if u.Contains(a.IP) || a.Contains(u.IP) {
			return true
		}
	}
	return false
}

func host(subnet *net.IPNet, i byte) net.IP {
	ip := append(net.IP(nil), subnet.IP.To4()...)
	ip[3] = i
	return ip
}
