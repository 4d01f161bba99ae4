//go:build linux

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/remote"
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
// cipher on both sides, OpenSSH's sftp -b with swdt's transfer path: a
// process that dials with pkg/remote and uploads with its Upload and
// defaults (the code swdt kubernetes stages with). swdt's swap itself
// needs its agent, which a Linux sshd does not run. The two alternate,
// in an order rotated every round.
func (b *bench) debianSSHD(rounds int) error {
	if _, err := os.Stat(sshdPath); err != nil {
		b.add("Debian sshd: skipped", sshdPath+" is missing (make test-deps installs openssh-server)", "")
		return nil
	}
	fmt.Fprintln(os.Stderr, "bench: Debian sshd, sftp -b vs swdt's upload")
	s, err := b.startSSHD("sshd")
	if err != nil {
		return err
	}
	defer s.stop()
	big := b.file("sshd-big.bin", b.o.bigMB<<20)
	contenders := []string{"OpenSSH sftp -b", "swdt upload (pkg/remote, defaults)"}
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
				r.wall, r.client, err = b.uploadProcess(s, big, dst)
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
	wall := map[string]time.Duration{}
	cpu := map[string]time.Duration{}
	for _, c := range contenders {
		var walls, clients, servers []time.Duration
		for _, r := range runs[c] {
			walls, clients, servers = append(walls, r.wall), append(clients, r.client), append(servers, r.server)
		}
		wall[c], cpu[c] = median(walls), median(clients)+median(servers)
		b.add(fmt.Sprintf("Debian sshd (%s): %s, put %d MB", cipher, c, b.o.bigMB),
			fmt.Sprintf("min %s, median %s; CPU median client %s, sshd %s (%d runs)", secs(slices.Min(walls)), secs(wall[c]),
				secs(median(clients)), secs(median(servers)), len(walls)), "")
	}
	b.add("Debian sshd: ratio swdt upload / sftp (medians)", ratio(wall[contenders[1]], wall[contenders[0]]), "<= 1.00")
	b.add("Debian sshd: ratio of CPU, client and sshd (medians)", ratio(cpu[contenders[1]], cpu[contenders[0]]), "")
	return nil
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

// uploadProcess times a run of this program's upload mode, process start
// to exit as sftp's (both through exec mode), and returns its CPU time
// too.
func (b *bench) uploadProcess(s *sshd, local, dst string) (wall, cpu time.Duration, err error) {
	m, err := b.timed(nil, nil, b.self, "upload", "-host", s.addr, "-user", s.user, "-key", b.key,
		"-known-hosts", s.knownHosts, local, dst)
	if err != nil {
		return 0, 0, err
	}
	return m.Wall, m.CPU, nil
}

// upload is this program's upload mode: it dials host as swdt does
// (pkg/remote, strict host key check, no ssh config) and uploads a local
// file with remote.Client.Upload, which is how swdt stages a binary.
func upload(args []string) error {
	fs := flag.NewFlagSet("upload", flag.ContinueOnError)
	host := fs.String("host", "", "host:port")
	usr := fs.String("user", "", "user")
	key := fs.String("key", "", "private key")
	knownHosts := fs.String("known-hosts", "", "known_hosts file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return errors.New("usage: bench upload -host H -user U -key K -known-hosts F LOCAL REMOTE")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	c, err := remote.Dial(ctx, remote.Config{Host: *host, User: *usr, PrivateKeyFile: *key, KnownHostsFile: *knownHosts,
		HostKeyPolicy: "strict", SSHConfigFile: remote.NoSSHConfig})
	if err != nil {
		return fmt.Errorf("dial %s: %w", *host, err)
	}
	defer c.Close()
	if err := c.Upload(ctx, f, fi.Size(), fs.Arg(1), nil); err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	return nil
}
