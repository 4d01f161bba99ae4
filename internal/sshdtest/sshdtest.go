// Package sshdtest starts real and in-process SSH servers for tests.
//
// Start runs Debian's OpenSSH server (/usr/sbin/sshd) on a free loopback
// port with throwaway host and user keys in a temporary directory, so the
// transport of swdt is tested against the real thing rather than a fake.
// When sshd is missing the test is skipped, except when CI=true, where it
// fails: a CI run must never pass by silently testing nothing.
//
// The package also provides small in-process helpers that OpenSSH cannot
// play: a Go SSH server with password auth (sshd without PAM cannot check
// passwords of a password-less root), a listener that accepts and never
// speaks, and a TCP proxy that cuts connections after N bytes.
//
// It must never be imported by non-test code.
package sshdtest

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/syncbuf"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// SSHDPath is where Debian's openssh-server installs sshd.
const SSHDPath = "/usr/sbin/sshd"

// Passphrase protects Server.PassphraseKeyFile.
const Passphrase = "correct horse battery staple"

// Server is a running sshd.
type Server struct {
	// Addr is 127.0.0.1:port.
	Addr string
	// Host and Port are Addr split.
	Host string
	Port int
	// User is the account tests log in as (the current user).
	User string
	// Dir is the temporary directory holding keys, config and logs.
	Dir string

	// KeyFile is an unencrypted authorized private key (ed25519).
	KeyFile string
	// PassphraseKeyFile is an authorized private key protected by Passphrase.
	PassphraseKeyFile string
	// UnauthorizedKeyFile is a valid private key the server does not accept.
	UnauthorizedKeyFile string

	// HostKeys are the server's current public host keys, ed25519 first.
	HostKeys []ssh.PublicKey

	t        testing.TB
	opts     options
	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{}
	log      *syncbuf.Buffer
	hostKeys []string // private key files
}

type options struct {
	hostKeyTypes []string
}

// Option changes how Start configures sshd.
type Option func(*options)

// WithHostKeyTypes sets the host key types sshd offers: "ed25519" and/or
// "ecdsa". The default is ed25519 only.
func WithHostKeyTypes(types ...string) Option {
	return func(o *options) { o.hostKeyTypes = types }
}

// Start runs sshd for the duration of the test. It skips the test when sshd
// is missing, unless CI=true.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	if _, err := os.Stat(SSHDPath); err != nil {
		msg := fmt.Sprintf("%s not found (apt-get install -y openssh-server): %v", SSHDPath, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	o := options{hostKeyTypes: []string{"ed25519"}}
	for _, f := range opts {
		f(&o)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatalf("current user: %v", err)
	}
	if os.Geteuid() == 0 {
		// sshd refuses to start as root without its privilege separation dir.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("create /run/sshd: %v", err)
		}
	}
	s := &Server{t: t, opts: o, User: u.Username, Dir: t.TempDir(), log: &syncbuf.Buffer{}}

	var authorized bytes.Buffer
	s.KeyFile = filepath.Join(s.Dir, "id_ed25519")
	pub := writeUserKey(t, s.KeyFile, "")
	authorized.Write(ssh.MarshalAuthorizedKey(pub))
	s.PassphraseKeyFile = filepath.Join(s.Dir, "id_ed25519_pass")
	pub = writeUserKey(t, s.PassphraseKeyFile, Passphrase)
	authorized.Write(ssh.MarshalAuthorizedKey(pub))
	s.UnauthorizedKeyFile = filepath.Join(s.Dir, "id_ed25519_other")
	writeUserKey(t, s.UnauthorizedKeyFile, "")
	if err := os.WriteFile(filepath.Join(s.Dir, "authorized_keys"), authorized.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	s.newHostKeys()
	s.Port = freePort(t)
	s.Host = "127.0.0.1"
	s.Addr = net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	s.start()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("sshd log:\n%s", s.Log())
		}
	})
	return s
}

// KnownHostsLine is a known_hosts line for the server's current host keys.
func (s *Server) KnownHostsLine() string {
	var b strings.Builder
	for _, k := range s.HostKeys {
		b.WriteString(knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, k))
		b.WriteByte('\n')
	}
	return b.String()
}

// Fingerprint is the SHA256 fingerprint of the first host key.
func (s *Server) Fingerprint() string { return ssh.FingerprintSHA256(s.HostKeys[0]) }

// Log returns what sshd wrote to stderr so far.
func (s *Server) Log() string { return s.log.String() }

// Stop kills the listening sshd and waits for it to exit; new connections
// are refused. Established connections are served by their own session
// processes and may outlive it: cut them with a Proxy to test drops.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// RestartWithNewHostKey stops sshd and starts it again on the same port
// with freshly generated host keys, as a reinstalled node would present.
func (s *Server) RestartWithNewHostKey() {
	s.t.Helper()
	s.Stop()
	s.newHostKeys()
	s.start()
}

func (s *Server) newHostKeys() {
	t := s.t
	s.HostKeys = nil
	s.hostKeys = nil
	for i, typ := range s.opts.hostKeyTypes {
		var priv any
		switch typ {
		case "ed25519":
			_, k, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			priv = k
		case "ecdsa":
			k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			priv = k
		default:
			t.Fatalf("sshdtest: unsupported host key type %q", typ)
		}
		signer, err := ssh.NewSignerFromKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		block, err := ssh.MarshalPrivateKey(priv, "")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(s.Dir, fmt.Sprintf("ssh_host_%s_key.%d", typ, time.Now().UnixNano()+int64(i)))
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		s.hostKeys = append(s.hostKeys, path)
		s.HostKeys = append(s.HostKeys, signer.PublicKey())
	}
}

func (s *Server) writeConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Port %d\nListenAddress %s\n", s.Port, s.Host)
	for _, k := range s.hostKeys {
		fmt.Fprintf(&b, "HostKey %s\n", k)
	}
	fmt.Fprintf(&b, "AuthorizedKeysFile %s\n", filepath.Join(s.Dir, "authorized_keys"))
	b.WriteString(`PidFile none
StrictModes no
UsePAM no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
LogLevel VERBOSE
MaxStartups 100
MaxSessions 100
Subsystem sftp internal-sftp
`)
	fmt.Fprintf(&b, "AllowUsers %s\n", s.User)
	path := filepath.Join(s.Dir, "sshd_config")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		s.t.Fatal(err)
	}
	return path
}

func (s *Server) start() {
	t := s.t
	t.Helper()
	cfg := s.writeConfig()
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(SSHDPath, "-D", "-e", "-f", cfg)
	cmd.Stdout = s.log
	cmd.Stderr = s.log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sshd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.cmd, s.exited = cmd, exited

	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			s.cmd = nil
			t.Fatalf("sshd exited during start-up:\n%s", s.log.String())
		default:
		}
		if Banner(s.Addr) {
			return
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			s.cmd = nil
			t.Fatalf("sshd did not accept connections on %s within 10s:\n%s", s.Addr, s.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Banner reports whether addr answers with an SSH identification string
// (an sshd that is up). The bench uses it too.
func Banner(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "SSH-")
}

func writeUserKey(t testing.TB, path, passphrase string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "sshdtest")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "sshdtest", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sshPub), 0o644); err != nil {
		t.Fatal(err)
	}
	return sshPub
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
