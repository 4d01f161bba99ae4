package simnode

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pkg/sftp"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/agentbin"
	"sigs.k8s.io/swdt/pkg/ops"
)

// TestServer is a simnode started for a test: loopback address, temporary
// state directory, a throwaway client key and a known_hosts file naming
// the server. It is closed when the test ends.
type TestServer struct {
	*Server
	t testing.TB
	// KeyFile is the client's private key (OpenSSH format, no passphrase).
	KeyFile string
	// PublicKeyFile is its public key (authorized_keys format).
	PublicKeyFile string
	// KnownHostsFile lists the server's host key for its address.
	KnownHostsFile string
	// Signer is the client key, for tests that dial with x/crypto/ssh.
	Signer ssh.Signer

	opts Options
}

// TestOption changes the options of StartTest.
type TestOption func(*Options)

// WithOptions edits the server options directly.
func WithOptions(fn func(*Options)) TestOption { return TestOption(fn) }

// WithDelays sets the service control delays (StartTest defaults to
// 20ms start, 20ms stop, 100ms crash).
func WithDelays(d Delays) TestOption { return func(o *Options) { o.Delays = &d } }

// WithFaults starts the server with faults injected.
func WithFaults(f Faults) TestOption { return func(o *Options) { o.Faults = &f } }

// WithAccount adds an account (for example a non-administrator one); the
// test key may log in as it.
func WithAccount(a Account) TestOption {
	return func(o *Options) { o.Accounts = append(o.Accounts, a) }
}

// WithHyperV makes the server a Hyper-V host with these VMs.
func WithHyperV(h HyperVHost) TestOption { return func(o *Options) { o.HyperV = &h } }

// WithScannerHold plays a virus scanner that holds every freshly written
// or just-run executable for d.
func WithScannerHold(d time.Duration) TestOption { return func(o *Options) { o.ScannerHold = d } }

// WithKubeletSetup seeds the kubelet service the way k installs it.
func WithKubeletSetup(k KubeletSetup) TestOption { return func(o *Options) { o.KubeletSetup = k } }

// WithPassword enables password authentication for the administrator.
func WithPassword(pw string) TestOption { return func(o *Options) { o.Password = pw } }

// StartTest starts a simnode for t.
func StartTest(t testing.TB, opts ...TestOption) *TestServer {
	t.Helper()
	keyDir := t.TempDir()
	signer, keyFile, pubFile, err := writeClientKey(keyDir)
	if err != nil {
		t.Fatalf("simnode: client key: %v", err)
	}
	o := Options{
		Listen:         "127.0.0.1:0",
		StateDir:       filepath.Join(t.TempDir(), "simnode"),
		AuthorizedKeys: []ssh.PublicKey{signer.PublicKey()},
		Delays: &Delays{ServiceStart: 20 * time.Millisecond, ServiceStop: 20 * time.Millisecond, CrashAfter: 100 * time.Millisecond,
			ShutdownGrace: 500 * time.Millisecond, Boot: 100 * time.Millisecond},
	}
	for _, fn := range opts {
		fn(&o)
	}
	ts := &TestServer{t: t, KeyFile: keyFile, PublicKeyFile: pubFile, Signer: signer, opts: o,
		KnownHostsFile: filepath.Join(keyDir, "known_hosts")}
	ts.start()
	return ts
}

func (ts *TestServer) start() {
	ts.t.Helper()
	srv, err := New(ts.opts)
	if err != nil {
		ts.t.Fatalf("simnode: %v", err)
	}
	if err := srv.Start(context.Background()); err != nil {
		ts.t.Fatalf("simnode: %v", err)
	}
	ts.Server = srv
	ts.t.Cleanup(func() { srv.Close() })
	line := knownhosts.Line([]string{knownhosts.Normalize(srv.Addr())}, srv.HostKey())
	if err := os.WriteFile(ts.KnownHostsFile, []byte(line+"\n"), 0o600); err != nil {
		ts.t.Fatalf("simnode: write known_hosts: %v", err)
	}
}

// Restart closes the server and starts a new one on the same state
// directory (a new port; known_hosts is rewritten), as after a reboot of
// the simulator.
func (ts *TestServer) Restart() {
	ts.t.Helper()
	ts.Server.Close()
	ts.opts.Faults = nil
	ts.start()
}

// Credentials are the spec.credentials of a node.yaml for this server,
// logging in as the administrator with the test key and strict host key
// checking.
func (ts *TestServer) Credentials() v1alpha1.CredentialsSpec {
	return ts.CredentialsFor(ts.User())
}

// CredentialsFor is Credentials for another account.
func (ts *TestServer) CredentialsFor(user string) v1alpha1.CredentialsSpec {
	return v1alpha1.CredentialsSpec{
		Hostname:       ts.Addr(),
		Username:       user,
		PrivateKey:     ts.KeyFile,
		KnownHostsFile: ts.KnownHostsFile,
		HostKeyPolicy:  v1alpha1.HostKeyPolicyStrict,
	}
}

// SSHConfig is a ~/.ssh/config Host block that makes alias log in to this
// server as the administrator with the test key, for code that reaches a
// host by an alias (a Hyper-V host, or a VM's address).
func (ts *TestServer) SSHConfig(alias string) string {
	host, port, _ := net.SplitHostPort(ts.Addr())
	return fmt.Sprintf("Host %s\n  HostName %s\n  Port %s\n  User %s\n  IdentityFile %s\n", alias, host, port, ts.User(), ts.KeyFile)
}

// InstallAgent puts this build's amd64 swdt-agent where swdt uploads it
// and returns its path, for tests that run ops over SSH without swdt's
// delivery: simnode runs a file at the agent's path as swdt-agent only
// when its bytes are the embedded agent's.
func (ts *TestServer) InstallAgent() string {
	ts.t.Helper()
	a, err := agentbin.For("amd64")
	if err != nil {
		ts.t.Fatalf("simnode: %v", err)
	}
	path := ops.AgentPath(a.SHA256)
	if err := ts.Node().MkdirAll(ops.AgentDir); err != nil {
		ts.t.Fatalf("simnode: %v", err)
	}
	if err := ts.Node().WriteFile(path, a.Binary); err != nil {
		ts.t.Fatalf("simnode: %v", err)
	}
	return path
}

// State returns a snapshot of the node's state for assertions.
func (ts *TestServer) State() *State { return ts.Node().Snapshot() }

// Dial opens an SSH connection as user with the test key, checking the
// host key.
func (ts *TestServer) Dial(user string) (*ssh.Client, error) {
	cb, err := knownhosts.New(ts.KnownHostsFile)
	if err != nil {
		return nil, err
	}
	return ssh.Dial("tcp", ts.Addr(), &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(ts.Signer)},
		HostKeyCallback: cb,
		Timeout:         10 * time.Second,
	})
}

// Execer returns a command runner (node.Conn's Exec) over a new SSH connection as the
// administrator (closed when the test ends), for tests that run ops
// without pkg/remote.
func (ts *TestServer) Execer() *SSHExecer {
	return ts.ExecerAs(ts.User())
}

// ExecerAs is Execer for another account.
func (ts *TestServer) ExecerAs(user string) *SSHExecer {
	ts.t.Helper()
	c, err := ts.Dial(user)
	if err != nil {
		ts.t.Fatalf("simnode: dial: %v", err)
	}
	ts.t.Cleanup(func() { c.Close() })
	return &SSHExecer{Client: c}
}

// SFTP opens an SFTP session as user over a new SSH connection, both
// closed when the test ends.
func (ts *TestServer) SFTP(user string) *sftp.Client {
	ts.t.Helper()
	c, err := ts.Dial(user)
	if err != nil {
		ts.t.Fatalf("simnode: dial: %v", err)
	}
	ts.t.Cleanup(func() { c.Close() })
	sc, err := sftp.NewClient(c)
	if err != nil {
		ts.t.Fatalf("simnode: sftp: %v", err)
	}
	ts.t.Cleanup(func() { sc.Close() })
	return sc
}

// SSHExecer runs commands over an x/crypto/ssh client: a minimal
// command runner for tests.
type SSHExecer struct {
	Client *ssh.Client
}

// Exec runs cmd with stdin (closed once fully written) and returns its
// exit status. When ctx ends, the session is closed.
func (e *SSHExecer) Exec(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	sess, err := e.Client.NewSession()
	if err != nil {
		return -1, fmt.Errorf("open session: %w", err)
	}
	defer sess.Close()
	sess.Stdout = stdout
	sess.Stderr = stderr
	in, err := sess.StdinPipe()
	if err != nil {
		return -1, err
	}
	if err := sess.Start(cmd); err != nil {
		return -1, fmt.Errorf("start %q: %w", firstWord(cmd), err)
	}
	go func() {
		if stdin != nil {
			_, _ = io.Copy(in, stdin)
		}
		in.Close()
	}()
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	select {
	case <-ctx.Done():
		sess.Close()
		select { // stdout and stderr are no longer written to
		case <-done:
		case <-time.After(5 * time.Second):
		}
		return -1, ctx.Err()
	case err := <-done:
		var ee *ssh.ExitError
		if errors.As(err, &ee) {
			return ee.ExitStatus(), nil
		}
		if err != nil {
			return -1, err
		}
		return 0, nil
	}
}

func firstWord(s string) string {
	if i := bytes.IndexByte([]byte(s), ' '); i > 0 {
		return s[:i]
	}
	return s
}

func writeClientKey(dir string) (ssh.Signer, string, string, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, "", "", err
	}
	block, err := ssh.MarshalPrivateKey(priv, "simnode test key")
	if err != nil {
		return nil, "", "", err
	}
	keyFile := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, "", "", err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, "", "", err
	}
	pubFile := keyFile + ".pub"
	if err := os.WriteFile(pubFile, ssh.MarshalAuthorizedKey(sshPub), 0o644); err != nil {
		return nil, "", "", err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	return signer, keyFile, pubFile, err
}

// WithWine runs the test server's agent under Wine, its prefix a copy of
// template (see BootWinePrefix).
func WithWine(template string) TestOption {
	return func(o *Options) { o.Wine = &Wine{Template: template} }
}
