//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/sshdtest"
)

// sshdPath is where Debian's openssh-server installs sshd (make test-deps
// installs it; internal/sshdtest runs it the same way for the tests).
const sshdPath = "/usr/sbin/sshd"

// sshd is a Debian OpenSSH server on loopback that offers one cipher.
type sshd struct {
	cmd        *exec.Cmd
	addr, user string
	knownHosts string
	// root is where its uploads go (a directory of the bench's).
	root string
}

// startSSHD runs sshd on a free loopback port with a fresh host key,
// b.key as the only authorized key, the internal SFTP server and cipher
// as its only cipher, so that both clients use it.
func (b *bench) startSSHD(name string) (*sshd, error) {
	dir := filepath.Join(b.dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	u, err := user.Current()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		// sshd refuses to start as root without its privilege separation dir.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			return nil, err
		}
	}
	hostKey := filepath.Join(dir, "ssh_host_ed25519_key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ssh-keygen: %w: %s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	config := filepath.Join(dir, "sshd_config")
	conf := fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
Ciphers %s
PidFile none
StrictModes no
UsePAM no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
Subsystem sftp internal-sftp
AllowUsers %s
`, port, hostKey, b.key+".pub", cipher, u.Username)
	if err := os.WriteFile(config, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	pub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		return nil, err
	}
	s := &sshd{addr: fmt.Sprintf("127.0.0.1:%d", port), user: u.Username, root: filepath.Join(dir, "uploads"),
		knownHosts: filepath.Join(dir, "known_hosts")}
	if err := os.WriteFile(s.knownHosts, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", port, pub)), 0o600); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.root, 0o700); err != nil {
		return nil, err
	}
	s.cmd = exec.Command(sshdPath, "-D", "-e", "-f", config)
	diesWithBench(s.cmd)
	log, err := os.Create(filepath.Join(dir, "sshd.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sshd: %w", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if sshdtest.Banner(s.addr) {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.stop()
			out, _ := os.ReadFile(log.Name())
			return nil, fmt.Errorf("sshd did not answer on %s within 10 s:\n%s", s.addr, out)
		}
	}
}

func (s *sshd) stop() {
	if s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// debianSSHD compares, on loopback against Debian's sshd with the same
// cipher on both sides, OpenSSH's sftp -b put with swdt cp of the same
// file: the swdt binary, from a node file whose credentials name the
// sshd (strict host key check), as a user runs it. Both processes are
// started and timed by execwrap (wrap.go); they alternate, in an order
// rotated every round.
func (b *bench) debianSSHD(rounds int) error {
	if _, err := os.Stat(sshdPath); err != nil {
		b.add("Debian sshd: skipped", sshdPath+" is missing (make test-deps installs openssh-server)", "")
		return nil
	}
	fmt.Fprintln(os.Stderr, "bench: Debian sshd, sftp -b vs swdt cp")
	s, err := b.startSSHD("sshd")
	if err != nil {
		return err
	}
	defer s.stop()
	big := b.file("sshd-big.bin", b.o.bigMB<<20)
	nodes := b.sshdNode(s)
	contenders := []string{"OpenSSH sftp -b put", "swdt cp"}
	// Wall times on a shared 2-core machine move with its load; the CPU
	// each side spent (the client process with its children; sshd's
	// session processes, once reaped) moves much less.
	type run struct{ wall, client, server time.Duration }
	runs := map[string][]run{}
	for round := range rounds {
		for i := range contenders {
			k := (i + round) % len(contenders)
			name := contenders[k]
			dst := filepath.Join(s.root, fmt.Sprintf("%d.bin", k))
			// Each put creates its file: neither pays for truncating or
			// unlinking the other's 128 MB.
			_ = os.Remove(dst)
			server := procCPU(s.cmd.Process.Pid, true)
			var r run
			if k == 0 {
				r.wall, r.client, err = b.sftp(s.addr, s.user, s.knownHosts, big, dst)
			} else {
				var m measured
				m, err = b.timed(nil, nil, b.o.swdt, "cp", "-c", nodes, big, "sshd:"+dst)
				r.wall, r.client = m.Wall, m.CPU
			}
			if err != nil {
				return err
			}
			if err := s.reaped(); err != nil {
				return err
			}
			r.server = procCPU(s.cmd.Process.Pid, true) - server
			if fi, err := os.Stat(dst); err != nil || fi.Size() != int64(b.o.bigMB<<20) {
				return fmt.Errorf("%s did not leave the whole file at %s: %v", name, dst, err)
			}
			runs[name] = append(runs[name], r)
		}
	}
	wall := map[string]series{}
	cpu := map[string]time.Duration{}
	for _, c := range contenders {
		var clients, servers series
		for _, r := range runs[c] {
			wall[c], clients, servers = append(wall[c], r.wall), append(clients, r.client), append(servers, r.server)
		}
		cpu[c] = clients.med() + servers.med()
		b.add(fmt.Sprintf("Debian sshd (%s): %s, %d MB", cipher, c, b.o.bigMB),
			fmt.Sprintf("%s; CPU median client %s, sshd %s", wall[c], secs(clients.med()), secs(servers.med())), "")
	}
	swdt, sftp := wall[contenders[1]], wall[contenders[0]]
	b.add("Debian sshd: ratio swdt cp / sftp (min / median)", ratio(swdt.min(), sftp.min())+" / "+ratio(swdt.med(), sftp.med()), "<= 1.00")
	b.add("Debian sshd: ratio of CPU, client and sshd (medians)", ratio(cpu[contenders[1]], cpu[contenders[0]]), "")
	return nil
}

// sshdNode writes a node file whose one node, sshd, is s: the bench's
// key, s's known_hosts, strict host key check.
func (b *bench) sshdNode(s *sshd) string {
	p := filepath.Join(b.dir, "sshd-node.yaml")
	doc := fmt.Sprintf(`apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: sshd
spec:
  credentials:
    hostname: %q
    username: %q
    privateKey: %q
    knownHostsFile: %q
    hostKeyPolicy: strict
`, s.addr, s.user, b.key, s.knownHosts)
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		panic(err)
	}
	return p
}

// reaped waits until sshd has no child process left: its session
// processes have exited and their CPU time is in its children's.
func (s *sshd) reaped() error {
	pid := s.cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
		if err != nil {
			return fmt.Errorf("sshd's session processes: %w", err)
		}
		if strings.TrimSpace(string(raw)) == "" {
			return nil
		}
	}
	return errors.New("sshd's session processes did not exit within 10 s")
}
