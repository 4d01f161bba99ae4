package front

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode/kubelet"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/swdt/pkg/simnode/simos"
	"sigs.k8s.io/swdt/pkg/simnode/wine"
)

// Options configure a simulated node.
type Options struct {
	// Listen is the address Start listens on (default 127.0.0.1:0).
	Listen string
	// StateDir holds state.json, faults.json, the host key and fs/ (the
	// simulated drives). It is created and seeded when empty.
	StateDir string
	// User is the administrator account's name (default Administrator).
	User string
	// Password enables password authentication for User.
	Password string
	// AuthorizedKeys may log in as any account.
	AuthorizedKeys []ssh.PublicKey
	// AuthorizedKeysFile is an OpenSSH authorized_keys file whose keys are
	// added to AuthorizedKeys.
	AuthorizedKeysFile string
	// Accounts are further accounts, e.g. a non-administrator one.
	Accounts []machine.Account
	// Hostname seeds the computer name of a new state (default
	// WIN-SIMNODE01).
	Hostname string
	// Bare seeds a new state as a VM with only OpenSSH: no containerd,
	// kubelet or kube-proxy service or file (what swdt join starts from).
	Bare bool
	// Delays of service control; nil means DefaultDelays.
	Delays *machine.Delays
	// Faults, when not nil, replace <StateDir>/faults.json at New.
	Faults *machine.Faults
	// HyperV, when not nil, makes the machine a Hyper-V host with these
	// VMs, replacing the Hyper-V part of the state at New.
	HyperV *machine.HyperVHost
	// LanguageMode, when set, replaces PowerShell's language mode at New
	// ("FullLanguage" or LanguageConstrained).
	LanguageMode string
	// Release, when set, makes the node that Windows Server release at
	// New: machine.Server2019 or machine.Server2022 (the default of a new
	// state). Server 2019 keeps a deleted file's name while another
	// program holds it open (the SharedOpen fault).
	Release string
	// Arch, when set, makes the machine one of that processor
	// architecture ("amd64", "arm64") at New.
	Arch string
	// FileSystem is C:'s file system: machine.NTFS (the default) or
	// machine.ReFS, which clones blocks (as a Dev Drive does).
	FileSystem string
	// ScannerHold, when positive, plays a virus scanner that holds every
	// freshly written or just-run executable that long (scanner.go).
	ScannerHold time.Duration
	// KubeletSetup, when set, makes the kubelet service run C:\k\kubelet.exe
	// that way (sc, nssm, nssm-powershell), applied at New.
	KubeletSetup machine.KubeletSetup
	// ClockOffset is how far the node's clock runs ahead of the host's
	// (negative: behind), as a VM's clock drifts: the simulated kubelet
	// stamps its Lease renewals and status with the node's time.
	ClockOffset time.Duration
	// Logger receives connection and op logs; nil discards.
	Logger *slog.Logger
	// AgentDigests, when set, lists further SHA-256 digests (hex) of
	// swdt-agent builds that run as swdt-agent, besides the builds
	// embedded in this simnode: a swdt built from another tree. It is
	// asked at every run of the agent's path.
	AgentDigests func() []string
	// Wine, when not nil, runs the uploaded agent under Wine (package wine).
	Wine *wine.Wine
}

// Server is a simulated Windows node reachable over SSH.
type Server struct {
	opts     Options
	m        *machine.Machine
	host     *simos.Host
	config   *ssh.ServerConfig
	hostKey  ssh.Signer
	accounts map[string]machine.Account
	keys     []ssh.PublicKey
	log      *slog.Logger
	wine     *wine.Node

	mu       sync.Mutex
	listener net.Listener
	conns    map[net.Conn]struct{}
	// sessions counts the SSH connections that completed their handshake.
	sessions int
	closed   bool
	wg       sync.WaitGroup
}

// New loads (or seeds) the node in opts.StateDir.
func New(opts Options) (*Server, error) {
	if opts.StateDir == "" {
		return nil, errors.New("simnode: a state directory is required")
	}
	if opts.User == "" {
		opts.User = "Administrator"
	}
	if opts.Hostname == "" {
		opts.Hostname = "WIN-SIMNODE01"
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	delays := machine.DefaultDelays()
	if opts.Delays != nil {
		delays = *opts.Delays
	}
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("simnode: create state directory: %w", err)
	}
	var wn *wine.Node
	if opts.Wine != nil {
		w, err := wine.Prepare(context.Background(), opts.StateDir, opts.Hostname, opts.Wine)
		if err != nil {
			return nil, fmt.Errorf("simnode: %w", err)
		}
		wn = w
	}
	accounts := map[string]machine.Account{strings.ToLower(opts.User): {Name: opts.User, Password: opts.Password, Admin: true}}
	for _, a := range opts.Accounts {
		accounts[strings.ToLower(a.Name)] = a
	}
	// The kubelet's pods run commands on the server, which exists only
	// once the machine is open (a kubelet resumed by Open execs later).
	var self atomic.Pointer[Server]
	hostExec := func(ctx context.Context, argv []string, tty *kubelet.Terminal, stdin io.Reader, stdout, stderr io.Writer, cut func()) int {
		s := self.Load()
		if s == nil {
			fmt.Fprintln(stderr, "simnode: the node is still starting")
			return 1
		}
		if tty != nil {
			return s.RunHostTerminal(ctx, argv, tty, stdin, stdout)
		}
		return s.RunHostProcess(ctx, argv, stdin, stdout, stderr, cut)
	}
	m, err := machine.Open(machine.Config{Dir: opts.StateDir, Hostname: opts.Hostname, Bare: opts.Bare, Delays: delays, Log: log,
		AgentDigests: opts.AgentDigests, Faults: opts.Faults, HyperV: opts.HyperV, LanguageMode: opts.LanguageMode, Release: opts.Release, Arch: opts.Arch,
		FileSystem:  opts.FileSystem,
		ScannerHold: opts.ScannerHold, KubeletSetup: opts.KubeletSetup, Accounts: slices.Collect(maps.Values(accounts)),
		Daemon: kubelet.Daemon{ClockOffset: opts.ClockOffset, Exec: hostExec}})
	if err != nil {
		return nil, fmt.Errorf("simnode: %w", err)
	}
	hostKey, err := loadHostKey(filepath.Join(opts.StateDir, "ssh_host_ed25519_key"))
	if err != nil {
		return nil, fmt.Errorf("simnode: %w", err)
	}
	s := &Server{opts: opts, m: m, host: &simos.Host{}, hostKey: hostKey, log: log, wine: wn, conns: map[net.Conn]struct{}{},
		accounts: accounts, keys: append([]ssh.PublicKey(nil), opts.AuthorizedKeys...)}
	if opts.AuthorizedKeysFile != "" {
		keys, err := readAuthorizedKeys(opts.AuthorizedKeysFile)
		if err != nil {
			return nil, fmt.Errorf("simnode: %w", err)
		}
		s.keys = append(s.keys, keys...)
	}
	s.config = &ssh.ServerConfig{
		PasswordCallback:  s.checkPassword,
		PublicKeyCallback: s.checkKey,
		ServerVersion:     "SSH-2.0-OpenSSH_for_Windows_9.5",
		BannerCallback: func(ssh.ConnMetadata) string {
			return ""
		},
	}
	s.config.AddHostKey(hostKey)
	self.Store(s)
	m.OnReboot(s.dropConns)
	if wn != nil {
		if err := wn.StartServer(); err != nil {
			return nil, fmt.Errorf("simnode: %w", err)
		}
	}
	return s, nil
}

func readAuthorizedKeys(path string) ([]ssh.PublicKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read authorized keys: %w", err)
	}
	keys := parseAuthorizedKeys(raw)
	if len(keys) == 0 {
		return nil, fmt.Errorf("no public key in %s", path)
	}
	return keys, nil
}

func parseAuthorizedKeys(raw []byte) []ssh.PublicKey {
	var keys []ssh.PublicKey
	for len(bytes.TrimSpace(raw)) > 0 {
		k, _, _, rest, err := ssh.ParseAuthorizedKey(raw)
		if err != nil {
			break
		}
		keys = append(keys, k)
		raw = rest
	}
	return keys
}

func loadHostKey(path string) (ssh.Signer, error) {
	if raw, err := os.ReadFile(path); err == nil {
		signer, err := ssh.ParsePrivateKey(raw)
		if err != nil {
			return nil, fmt.Errorf("parse host key %s: %w", path, err)
		}
		return signer, nil
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(priv, "simnode host key")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return nil, fmt.Errorf("write host key: %w", err)
	}
	return ssh.NewSignerFromKey(priv)
}

func (s *Server) account(user string) (machine.Account, bool) {
	a, ok := s.accounts[strings.ToLower(user)]
	return a, ok
}

func (s *Server) checkPassword(c ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
	a, ok := s.account(c.User())
	if ok && a.Password != "" && a.Password == string(pw) {
		return &ssh.Permissions{Extensions: map[string]string{"user": a.Name}}, nil
	}
	return nil, errors.New("permission denied")
}

// checkKey accepts the configured keys, and, like Windows OpenSSH, the keys
// in C:\ProgramData\ssh\administrators_authorized_keys for administrators
// (only when its ACL grants just Administrators and SYSTEM and its owner
// is one sshd accepts, see sshdAcceptsOwner) or in
// C:\Users\<user>\.ssh\authorized_keys for other accounts.
func (s *Server) checkKey(c ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	a, ok := s.account(c.User())
	if !ok {
		return nil, errors.New("permission denied")
	}
	perms := &ssh.Permissions{Extensions: map[string]string{"user": a.Name}}
	if ownKey(a, key) {
		return perms, nil
	}
	for _, k := range s.keys {
		if bytes.Equal(k.Marshal(), key.Marshal()) {
			return perms, nil
		}
	}
	n := s.node(a)
	file := `C:\Users\` + a.Name + `\.ssh\authorized_keys`
	if a.Admin {
		file = machine.PathAdminAuthorizedKeys
		if acl, _ := n.ACL(file); !machine.AdminOnlyACL(acl) || !n.SSHDAcceptsOwner(file, a.Name) {
			return nil, errors.New("permission denied")
		}
	}
	if raw, err := n.ReadFile(file); err == nil {
		for _, k := range parseAuthorizedKeys(raw) {
			if bytes.Equal(k.Marshal(), key.Marshal()) {
				return perms, nil
			}
		}
	}
	return nil, errors.New("permission denied")
}

func (s *Server) node(a machine.Account) *simos.Node { return s.host.Node(s.m.Node(a)) }

// Node returns the machine as seen by the administrator account, for tests
// and tools that inspect or arrange state directly.
func (s *Server) Node() *simos.Node { a, _ := s.account(s.opts.User); return s.node(a) }

// NodeAs returns the machine as seen by the named account.
func (s *Server) NodeAs(user string) (*simos.Node, error) {
	a, ok := s.account(user)
	if !ok {
		return nil, fmt.Errorf("simnode: no account %q", user)
	}
	return s.node(a), nil
}

// StateDir is the server's state directory.
func (s *Server) StateDir() string { return s.opts.StateDir }

// User is the administrator account's name.
func (s *Server) User() string { return s.opts.User }

// HostKey is the server's public host key.
func (s *Server) HostKey() ssh.PublicKey { return s.hostKey.PublicKey() }

// HostKeyFingerprint is the SHA256 fingerprint OpenSSH prints.
func (s *Server) HostKeyFingerprint() string { return ssh.FingerprintSHA256(s.hostKey.PublicKey()) }

// Faults returns the faults currently injected.
func (s *Server) Faults() machine.Faults { return s.m.Faults() }

// SetFaults replaces the injected faults.
func (s *Server) SetFaults(f machine.Faults) error {
	return s.m.UpdateFaults(func(cur *machine.Faults) { *cur = f })
}

// UpdateFaults changes the injected faults.
func (s *Server) UpdateFaults(fn func(f *machine.Faults)) error { return s.m.UpdateFaults(fn) }

// Start listens on Options.Listen and serves until ctx ends or Close.
func (s *Server) Start(ctx context.Context) error {
	l, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("simnode: listen: %w", err)
	}
	go func() {
		<-ctx.Done()
		s.Close()
	}()
	go func() { _ = s.Serve(l) }()
	// Serve registers the listener; make Addr valid on return.
	s.mu.Lock()
	if s.listener == nil {
		s.listener = l
	}
	s.mu.Unlock()
	return nil
}

// Serve accepts connections on l until it is closed.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return net.ErrClosed
	}
	s.listener = l
	s.mu.Unlock()
	for {
		c, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return nil
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

// Addr is the listening address (host:port), or "" before Start/Serve.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return ""
	}
	return s.listener.Addr().String()
}

// Connections counts the SSH connections that completed their handshake
// since the server started.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions
}

// DropConnections closes every open connection, as a link that drops
// does; the server keeps listening.
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// Close stops listening, drops every connection and waits for their
// handlers. The state is already saved.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	if s.listener != nil {
		s.listener.Close()
	}
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.m.Close()
	if s.wine != nil {
		s.wine.Close()
	}
	return nil
}

func (s *Server) serveConn(c net.Conn) {
	defer c.Close()
	if s.m.Down() {
		return // rebooting: sshd is not running
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	sc, chans, reqs, err := ssh.NewServerConn(c, s.config)
	if err != nil {
		s.log.Debug("ssh handshake failed", "remote", c.RemoteAddr().String(), "err", err)
		return
	}
	_ = c.SetDeadline(time.Time{})
	defer sc.Close()
	s.mu.Lock()
	s.sessions++
	s.mu.Unlock()
	user := sc.Permissions.Extensions["user"]
	a, _ := s.account(user)
	s.log.Info("connection", "remote", c.RemoteAddr().String(), "user", a.Name)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := &connState{srv: s, conn: sc, account: a, ctx: ctx}
	go ssh.DiscardRequests(reqs)
	var wg sync.WaitGroup
	for nc := range chans {
		if nc.ChannelType() == "direct-tcpip" {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cs.serveDirectTCPIP(nc)
			}()
			continue
		}
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only session channels are supported")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs.serveSession(ch, creqs)
		}()
	}
	// The connection is gone: end what its sessions still run.
	cancel()
	wg.Wait()
}

// connState is one SSH connection.
type connState struct {
	srv     *Server
	conn    *ssh.ServerConn
	account machine.Account

	// ctx ends when the connection does.
	ctx context.Context

	mu          sync.Mutex
	sftpWritten int64
	cutAt       int64
}

func (cs *connState) serveSession(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var pty *ptyState
	for req := range reqs {
		switch req.Type {
		case "pty-req":
			var err error
			pty, err = parsePtyReq(req.Payload)
			if req.WantReply {
				_ = req.Reply(err == nil, nil)
			}
		case "env", "window-change", "signal":
			// Accepted and ignored before the shell runs.
			if req.WantReply {
				_ = req.Reply(true, nil)
			}
		case "exec":
			var p struct{ Command string }
			if err := ssh.Unmarshal(req.Payload, &p); err != nil {
				_ = req.Reply(false, nil)
				continue
			}
			_ = req.Reply(true, nil)
			if _, _, agent := ops.ParseCommandLine(p.Command); pty != nil && !agent {
				// A command with a terminal (ssh -t): the login shell
				// runs it, as cmd.exe /c does.
				cs.exit(ch, cs.serveShell(cs.ctx, ch, reqs, pty, p.Command))
				return
			}
			// The request channel closes when the client closes the
			// session: ctx ends (an agent runs on, see agentkill.go). A
			// signal request ends the command.
			ctx, cancel := context.WithCancel(cs.ctx)
			signalled := make(chan struct{})
			go func() {
				once := false
				for r := range reqs {
					if r.Type == "signal" && !once {
						once = true
						close(signalled)
					}
					if r.WantReply {
						_ = r.Reply(r.Type == "signal", nil)
					}
				}
				cancel()
			}()
			ctx = context.WithValue(ctx, simos.SignalKey{}, (<-chan struct{})(signalled))
			status := cs.exec(ctx, ch, p.Command)
			cancel()
			cs.exit(ch, status)
			return
		case "subsystem":
			var p struct{ Name string }
			if err := ssh.Unmarshal(req.Payload, &p); err != nil || p.Name != "sftp" {
				_ = req.Reply(false, nil)
				continue
			}
			_ = req.Reply(true, nil)
			go ssh.DiscardRequests(reqs)
			sch := &serialChannel{Channel: ch}
			cs.serveSFTP(sch)
			// pkg/sftp may still be sending a reply when Serve returns
			// (the connection was cut); x/crypto's CloseWrite must not
			// run alongside a Write.
			sch.mu.Lock()
			cs.exit(ch, 0)
			sch.mu.Unlock()
			return
		case "shell":
			_ = req.Reply(true, nil)
			cs.exit(ch, cs.serveShell(cs.ctx, ch, reqs, pty, ""))
			return
		default:
			if req.WantReply {
				_ = req.Reply(false, nil)
			}
		}
	}
}

// serialChannel serialises writes to a channel, so that closing it can
// wait for a write in progress.
type serialChannel struct {
	ssh.Channel
	mu sync.Mutex
}

func (c *serialChannel) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.Channel.Write(p)
}

func (cs *connState) exit(ch ssh.Channel, status int) {
	_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(status)}))
	_ = ch.CloseWrite()
}

// ParseNonAdmin reads a --non-admin flag's NAME=PUBKEYFILE: a
// non-administrator account that logs in with the keys in that
// authorized_keys file (and with no other).
func ParseNonAdmin(v string) (machine.Account, error) {
	name, file, ok := strings.Cut(v, "=")
	if !ok || name == "" || file == "" {
		return machine.Account{}, fmt.Errorf("--non-admin %q: want NAME=PUBKEYFILE, e.g. mallory=mallory.pub", v)
	}
	if strings.ContainsAny(name, `\/"[]:|<>+=;,?*@ `) {
		return machine.Account{}, fmt.Errorf("--non-admin %q: %q is not a Windows user name (no spaces or any of \\/\"[]:|<>+=;,?*@)", v, name)
	}
	keys, err := readAuthorizedKeys(file)
	if err != nil {
		return machine.Account{}, fmt.Errorf("--non-admin %q: %w", v, err)
	}
	return machine.Account{Name: name, Keys: keys}, nil
}

// ownKey reports whether key is one of a's own keys.
func ownKey(a machine.Account, key ssh.PublicKey) bool {
	for _, k := range a.Keys {
		if bytes.Equal(k.Marshal(), key.Marshal()) {
			return true
		}
	}
	return false
}

// dropConns closes every SSH connection, as a machine going down does.
func (s *Server) dropConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
}

// UntrustedRuns lists the programs at the agent's path that ran although
// their bytes are not swdt-agent's (each also logged as "ran untrusted
// program PATH"), in order: a test proves that nothing planted ran by
// finding this empty.
func (s *Server) UntrustedRuns() []string { return s.m.UntrustedRuns() }
