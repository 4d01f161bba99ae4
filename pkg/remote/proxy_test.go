package remote

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// route is a simnode that only jump hosts and ProxyCommands can reach: its
// ssh config name, winnode, has HostName winnode.internal, which nothing
// but their route tables resolves.
type route struct {
	node *simnode.TestServer
	// bastion forwards to winnode.internal:22 and inner.internal:22;
	// inner forwards to winnode.internal:22 only.
	bastion, inner *sshdtest.JumpServer
	// jumpKey logs in to both jump hosts as jumper; the node refuses it.
	jumpKey string
	// knownHosts has the keys of the node, bastion and inner.
	knownHosts string
	// config is the ssh config every case starts from.
	config string
}

const winnode = "winnode.internal:22"

func startRoute(t *testing.T) *route {
	t.Helper()
	r := &route{node: simnode.StartTest(t)}
	dir := t.TempDir()
	r.jumpKey = filepath.Join(dir, "jump_ed25519")
	pub := writeKey(t, r.jumpKey)
	r.inner = sshdtest.StartJump(t, "jumper", pub, map[string]string{winnode: r.node.Addr()})
	r.bastion = sshdtest.StartJump(t, "jumper", pub, map[string]string{winnode: r.node.Addr(), "inner.internal:22": r.inner.Addr})
	r.knownHosts = filepath.Join(dir, "known_hosts")
	writeFile(t, r.knownHosts, hostLine(winnode, r.node.HostKey())+hostLine(r.bastion.Addr, r.bastion.HostKey)+
		hostLine("inner.internal:22", r.inner.HostKey))
	r.config = "Host winnode\n  HostName winnode.internal\n" +
		"Host bastion\n  HostName 127.0.0.1\n  Port " + port(r.bastion.Addr) + "\n  User jumper\n  IdentityFile " + r.jumpKey + "\n" +
		"Host inner\n  HostName inner.internal\n  User jumper\n  IdentityFile " + r.jumpKey + "\n"
	return r
}

// cfg is the node file's side: the node's user and key, known_hosts and
// strict checking; the ssh config says how to get there.
func (r *route) cfg(t *testing.T, host, sshConfig string) Config {
	return Config{Host: host, User: r.node.User(), PrivateKeyFile: r.node.KeyFile, KnownHostsFile: r.knownHosts,
		HostKeyPolicy: "strict", SSHConfigFile: writeSSHConfig(t, sshConfig), DialTimeout: DefaultDialTimeout}
}

// stat proves the connection reaches the node.
func stat(t *testing.T, c *Client) {
	t.Helper()
	if _, err := c.Stat(t.Context(), `C:\k\kubelet.exe`); err != nil {
		t.Fatalf("Stat on the node: %v", err)
	}
}

func TestProxyJump(t *testing.T) {
	r := startRoute(t)
	bport := port(r.bastion.Addr)
	tests := []struct {
		name string
		// config comes before the route's, so its values win.
		config string
		host   string
		setup  func(t *testing.T)
		// wantBastion and wantInner are the forwards each must have seen.
		wantBastion, wantInner []string
	}{
		{name: "a Host alias with its own User, Port and IdentityFile",
			config: "Host winnode\n  ProxyJump bastion\n", wantBastion: []string{winnode}},
		{name: "user@host:port, the key in ssh-agent",
			config: "Host winnode\n  ProxyJump jumper@127.0.0.1:" + bport + "\n", wantBastion: []string{winnode},
			setup: func(t *testing.T) { startAgent(t, r.jumpKey) }},
		{name: "ssh:// URI, the default key ~/.ssh/id_ed25519",
			config: "Host winnode\n  ProxyJump ssh://jumper@127.0.0.1:" + bport + "\n", wantBastion: []string{winnode},
			setup: func(t *testing.T) {
				home := t.TempDir()
				t.Setenv("HOME", home)
				data, _ := os.ReadFile(r.jumpKey)
				writeFile(t, filepath.Join(home, ".ssh", "id_ed25519"), string(data))
			}},
		{name: "two hops; the second's own ProxyJump does not apply",
			config:      "Host winnode\n  ProxyJump bastion, inner\nHost inner\n  ProxyJump nowhere.invalid\n",
			wantBastion: []string{"inner.internal:22"}, wantInner: []string{winnode}},
		{name: "chained: the jump host's own ProxyJump",
			config:      "Host winnode\n  ProxyJump inner\nHost inner\n  ProxyJump bastion\n",
			wantBastion: []string{"inner.internal:22"}, wantInner: []string{winnode}},
		{name: "ProxyJump none wins when it comes first",
			host:   "direct",
			config: "Host direct\n  HostName 127.0.0.1\n  Port " + port(r.node.Addr()) + "\n  ProxyJump none\nHost *\n  ProxyJump bastion\n",
			setup: func(t *testing.T) {
				data, _ := os.ReadFile(r.node.KnownHostsFile)
				writeFile(t, r.knownHosts, string(must(os.ReadFile(r.knownHosts)))+string(data))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := map[*sshdtest.JumpServer]int{r.bastion: len(r.bastion.Forwards()), r.inner: len(r.inner.Forwards())}
			saved := must(os.ReadFile(r.knownHosts))
			t.Cleanup(func() { writeFile(t, r.knownHosts, string(saved)) })
			if tt.setup != nil {
				tt.setup(t)
			}
			host := tt.host
			if host == "" {
				host = "winnode"
			}
			c := dial(t, r.cfg(t, host, tt.config+r.config))
			stat(t, c)
			if tt.host == "" && c.Addr() != winnode {
				t.Errorf("Addr = %s, want %s", c.Addr(), winnode)
			}
			if got, want := c.HostKey(), r.node.HostKeyFingerprint(); got != want {
				t.Errorf("HostKey = %s, want the node's %s (not a jump host's)", got, want)
			}
			for js, want := range map[*sshdtest.JumpServer][]string{r.bastion: tt.wantBastion, r.inner: tt.wantInner} {
				if got := js.Forwards()[before[js]:]; !slices.Equal(got, want) {
					t.Errorf("jump host %s forwarded to %q, want %q", js.Addr, got, want)
				}
			}
		})
	}
}

// TestProxyJumpThroughSSHD: OpenSSH's sshd as the jump host, for its
// direct-tcpip. (The node is on loopback too here: TestProxyJump proves
// the way; this proves sshd forwards for swdt.)
func TestProxyJumpThroughSSHD(t *testing.T) {
	s := sshdtest.Start(t)
	ts := simnode.StartTest(t)
	conf := "Host winnode\n  HostName 127.0.0.1\n  Port " + port(ts.Addr()) + "\n  ProxyJump jump\n" +
		"Host jump\n  HostName 127.0.0.1\n  Port " + port(s.Addr) + "\n  User " + s.User + "\n  IdentityFile " + s.KeyFile + "\n"
	kh := filepath.Join(t.TempDir(), "known_hosts")
	writeFile(t, kh, s.KnownHostsLine()+string(must(os.ReadFile(ts.KnownHostsFile))))
	stat(t, dial(t, Config{Host: "winnode", User: ts.User(), PrivateKeyFile: ts.KeyFile, KnownHostsFile: kh,
		HostKeyPolicy: "strict", SSHConfigFile: writeSSHConfig(t, conf)}))
	if !strings.Contains(s.Log(), "Accepted publickey for "+s.User) {
		t.Errorf("sshd did not log the jump login:\n%s", s.Log())
	}
}

// TestProxyJumpReconnect: a new connection takes the same way; the
// warning about directives swdt ignores names the jump host's too, once.
func TestProxyJumpReconnect(t *testing.T) {
	r := startRoute(t)
	var warnings []string
	cfg := r.cfg(t, "winnode", "Host winnode\n  ProxyJump bastion\nHost bastion\n  Compression yes\n"+r.config)
	cfg.Warn = func(m string) { warnings = append(warnings, m) }
	c := dial(t, cfg)
	if err := c.Reconnect(t.Context()); err != nil {
		t.Fatal(err)
	}
	stat(t, c)
	if got := r.bastion.Forwards(); !slices.Equal(got, []string{winnode, winnode}) || r.bastion.Logins() != 2 {
		t.Errorf("bastion: %d logins, forwards %q; want 2 of each", r.bastion.Logins(), got)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "sets Compression for bastion, which swdt does not support") {
		t.Errorf("warnings = %q, want one about Compression for bastion", warnings)
	}
}

func TestProxyJumpFailures(t *testing.T) {
	r := startRoute(t)
	closed := sshdtest.ClosedPort(t)
	tests := []struct {
		name, config string
		// knownHosts replaces the route's known_hosts when set.
		knownHosts func() string
		check      func(t *testing.T, err error)
	}{
		{name: "the jump host's key changed", config: "Host winnode\n  ProxyJump bastion\n",
			knownHosts: func() string {
				return hostLine(winnode, r.node.HostKey()) + hostLine(r.bastion.Addr, r.inner.HostKey)
			},
			check: func(t *testing.T, err error) {
				var ce *HostKeyChangedError
				if !errors.As(err, &ce) || !strings.HasPrefix(err.Error(), "jump host bastion: HOST KEY CHANGED for [127.0.0.1]:") {
					t.Fatalf("want the jump host's *HostKeyChangedError, got %v", err)
				}
			}},
		{name: "the jump host is unknown under strict", config: "Host winnode\n  ProxyJump bastion\n",
			knownHosts: func() string { return hostLine(winnode, r.node.HostKey()) },
			check: func(t *testing.T, err error) {
				if !errors.Is(err, ErrUnknownHost) || !strings.HasPrefix(err.Error(), "jump host bastion: ") {
					t.Fatalf("want the jump host's unknown host error, got %v", err)
				}
			}},
		{name: "the node's key changed behind the jump host", config: "Host winnode\n  ProxyJump bastion\n",
			knownHosts: func() string {
				return hostLine(winnode, r.bastion.HostKey) + hostLine(r.bastion.Addr, r.bastion.HostKey)
			},
			check: func(t *testing.T, err error) {
				var ce *HostKeyChangedError
				if !errors.As(err, &ce) || ce.Host != "winnode.internal" || strings.Contains(err.Error(), "jump host") {
					t.Fatalf("want the node's *HostKeyChangedError, got %v", err)
				}
			}},
		{name: "the jump host cannot reach the node", config: "Host winnode\n  HostName lost.internal\n  ProxyJump bastion\n",
			check: func(t *testing.T, err error) {
				var de *DialError
				if !errors.As(err, &de) || de.ViaJump != "bastion" || de.Jump != "" || de.Addr != "lost.internal:22" ||
					!strings.Contains(err.Error(), "through jump host bastion") || !strings.Contains(err.Error(), "no route to lost.internal:22") {
					t.Fatalf("want a *DialError through bastion, got %v", err)
				}
			}},
		{name: "the jump host is down", config: "Host winnode\n  ProxyJump jumper@" + closed + "\n",
			check: func(t *testing.T, err error) {
				var de *DialError
				if !errors.As(err, &de) || de.Jump != "127.0.0.1" || !strings.Contains(err.Error(), "cannot reach jump host 127.0.0.1 at "+closed) {
					t.Fatalf("want a *DialError for the jump host, got %v", err)
				}
			}},
		{name: "the jump host refuses the key",
			config: "Host winnode\n  ProxyJump bastion2\nHost bastion2\n  HostName 127.0.0.1\n  Port " + port(r.bastion.Addr) +
				"\n  User jumper\n  IdentityFile " + r.node.KeyFile + "\n",
			check: func(t *testing.T, err error) {
				var ae *AuthError
				if !errors.As(err, &ae) || ae.Jump != "bastion2" || ae.User != "jumper" ||
					!strings.Contains(err.Error(), r.node.KeyFile) || !strings.Contains(err.Error(), "IdentityFile of bastion2") {
					t.Fatalf("want the jump host's *AuthError, got %v", err)
				}
			}},
		{name: "jump hosts that name each other", config: "Host winnode\n  ProxyJump loopa\nHost loopa\n  ProxyJump loopb\nHost loopb\n  ProxyJump loopa\n",
			check: func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), "longer than 10 hops") {
					t.Fatalf("err = %v", err)
				}
			}},
		{name: "a malformed ProxyJump", config: "Host winnode\n  ProxyJump bastion,,inner\n",
			check: func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), `"" is not [user@]host[:port]`) {
					t.Fatalf("err = %v", err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := r.cfg(t, "winnode", tt.config+r.config)
			if tt.knownHosts != nil {
				cfg.KnownHostsFile = filepath.Join(t.TempDir(), "known_hosts")
				writeFile(t, cfg.KnownHostsFile, tt.knownHosts())
			}
			c, err := Dial(t.Context(), cfg)
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded, want an error")
			}
			tt.check(t, err)
		})
	}
}

// TestProxyJumpAcceptNew: without hostKeyPolicy and knownHostsFile in the
// node file, each hop takes StrictHostKeyChecking and UserKnownHostsFile
// from its own ssh config entry: the jump host and the node are recorded,
// each under its own name.
func TestProxyJumpAcceptNew(t *testing.T) {
	r := startRoute(t)
	kh := filepath.Join(t.TempDir(), "known_hosts")
	cfg := r.cfg(t, "winnode", "Host winnode\n  ProxyJump bastion\n"+r.config+
		"Host winnode bastion\n  StrictHostKeyChecking accept-new\n  UserKnownHostsFile "+kh+"\n")
	cfg.HostKeyPolicy, cfg.KnownHostsFile = "", ""
	stat(t, dial(t, cfg))
	want := hostLine(r.bastion.Addr, r.bastion.HostKey) + hostLine(winnode, r.node.HostKey())
	if got := string(must(os.ReadFile(kh))); got != want {
		t.Errorf("known_hosts = %q, want %q", got, want)
	}
}

// ncCommand is a ProxyCommand running this test binary as a netcat that
// knows routes and logs its arguments to log.
func ncCommand(t *testing.T, routes string, args string) (command, log string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the ProxyCommand tests use sh")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	log = filepath.Join(t.TempDir(), "nc.log")
	t.Setenv(ncLogEnv, log)
	t.Setenv(ncRouteEnv, routes)
	return "'" + exe + "' " + args, log
}

func TestProxyCommand(t *testing.T) {
	r := startRoute(t)
	cmd, log := ncCommand(t, winnode+"="+r.node.Addr()+",bastion.internal:22="+r.bastion.Addr, "%h %p %r %n 100%%")
	tests := []struct {
		name, config string
		wantLog      string
		wantBastion  []string
	}{
		{name: "the node's ProxyCommand, with its tokens; it comes before a ProxyJump",
			config:  "Host winnode\n  ProxyCommand " + cmd + "\nHost *\n  ProxyJump bastion\n",
			wantLog: "winnode.internal 22 " + r.node.User() + " winnode 100%"},
		{name: "the jump host's ProxyCommand",
			config: "Host winnode\n  ProxyJump bastion\nHost bastion\n  HostName bastion.internal\n  Port 22\n  ProxyCommand " + cmd + "\n",
			// The known_hosts name of the jump host is bastion.internal now.
			wantLog: "bastion.internal 22 jumper bastion 100%", wantBastion: []string{winnode}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(log)
			before := len(r.bastion.Forwards())
			cfg := r.cfg(t, "winnode", tt.config+r.config)
			cfg.KnownHostsFile = filepath.Join(t.TempDir(), "known_hosts")
			writeFile(t, cfg.KnownHostsFile, string(must(os.ReadFile(r.knownHosts)))+hostLine("bastion.internal:22", r.bastion.HostKey))
			c := dial(t, cfg)
			stat(t, c)
			pid, args, _ := strings.Cut(strings.TrimSpace(string(must(os.ReadFile(log)))), " ")
			if args != tt.wantLog {
				t.Errorf("ProxyCommand ran with %q, want %q", args, tt.wantLog)
			}
			if got := r.bastion.Forwards()[before:]; !slices.Equal(got, tt.wantBastion) {
				t.Errorf("bastion forwarded to %q, want %q", got, tt.wantBastion)
			}
			// Closing the client kills the command and waits for it.
			c.Close()
			n, _ := strconv.Atoi(pid)
			if p, err := os.FindProcess(n); err == nil && p.Signal(syscall.Signal(0)) == nil {
				t.Errorf("ProxyCommand (pid %d) still runs after Close", n)
			}
		})
	}
}

func TestProxyCommandFails(t *testing.T) {
	r := startRoute(t)
	cmd, _ := ncCommand(t, "", "%h %p")
	_, err := Dial(t.Context(), r.cfg(t, "winnode", "Host winnode\n  ProxyCommand "+cmd+"\n"+r.config))
	var de *DialError
	if !errors.As(err, &de) || de.ProxyCommand == "" {
		t.Fatalf("want a *DialError naming the ProxyCommand, got %v", err)
	}
	for _, want := range []string{"with ProxyCommand", "exit status 3", "nc: no route to winnode.internal:22", "run the ProxyCommand by hand"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestParseProxyJump(t *testing.T) {
	tests := []struct {
		in      string
		want    []jumpSpec
		wantErr bool
	}{
		{in: "bastion", want: []jumpSpec{{host: "bastion"}}},
		{in: "me@bastion:2222", want: []jumpSpec{{user: "me", host: "bastion", port: "2222"}}},
		{in: "a, b@c ,ssh://d@[fe80::1]:22", want: []jumpSpec{{host: "a"}, {user: "b", host: "c"}, {user: "d", host: "fe80::1", port: "22"}}},
		{in: `DOMAIN\u@ad.example@jump`, want: []jumpSpec{{user: `DOMAIN\u@ad.example`, host: "jump"}}},
		{in: "a,", wantErr: true},
		{in: "@host", wantErr: true},
		{in: "a,none", wantErr: true},
		{in: "a b", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseProxyJump(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && !slices.Equal(got, tt.want)) {
			t.Errorf("parseProxyJump(%q) = %+v, %v; want %+v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// writeKey writes a new unencrypted ed25519 private key to path.
func writeKey(t *testing.T, path string) ssh.PublicKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(pem.EncodeToMemory(block)))
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func port(addr string) string { return addr[strings.LastIndex(addr, ":")+1:] }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
