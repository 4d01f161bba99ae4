package remote

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kevinburke/ssh_config"

	"sigs.k8s.io/swdt/internal/sshname"
)

// PassphraseEnv holds the passphrase of an encrypted private key, for
// non-interactive runs.
const PassphraseEnv = "SWDT_KEY_PASSPHRASE"

// NoSSHConfig as Config.SSHConfigFile turns ~/.ssh/config off (as ssh -F none).
const NoSSHConfig = "none"

// Defaults used when a Config leaves them zero.
const (
	DefaultDialTimeout       = 15 * time.Second
	DefaultKeepAliveInterval = 15 * time.Second
	// DefaultStallTimeout is how long an upload may make no progress
	// before its connection is given up and the upload tried again.
	DefaultStallTimeout = 60 * time.Second
	// keepAliveCountMax intervals may pass with nothing from the server
	// before the connection is declared dead (as OpenSSH's
	// ServerAliveCountMax).
	keepAliveCountMax = 3
)

// Config says how to reach and authenticate to one node.
type Config struct {
	// Host is host[:port], [v6addr]:port, or a Host alias from the ssh
	// config file. Port 22 when neither Host nor ssh config give one.
	Host string
	// User to log in as; when empty, the ssh config's User, then the
	// local user name.
	User string
	// PrivateKeyFile is a private key to offer (optional). When empty, the
	// ssh config's IdentityFile entries are used, else the default
	// ~/.ssh/id_ed25519, id_ecdsa and id_rsa that exist.
	PrivateKeyFile string
	// Password, already resolved by the caller (see ConfigFromSpec). Used
	// for the password and keyboard-interactive methods. Never logged.
	Password string
	// PasswordEnv names the environment variable the password comes from
	// (credentials.passwordEnv), if any. When Password is empty because it
	// is unset or empty, Dial logs in with the private keys and ssh-agent
	// and warns, or fails with a *PasswordUnsetError when there are none.
	PasswordEnv string
	// NodeFile is the node file this Config was built from, named in
	// errors about the credentials it sets (optional).
	NodeFile string
	// KnownHostsFile is where host keys are checked and, under accept-new,
	// recorded. When empty: the ssh config's UserKnownHostsFile for the
	// host, else ~/.ssh/known_hosts.
	KnownHostsFile string
	// HostKeyPolicy is "strict", "accept-new" or "insecure". When empty:
	// the ssh config's StrictHostKeyChecking for the host (yes and ask are
	// strict, no is insecure), else accept-new.
	HostKeyPolicy string
	// SSHConfigFile is the OpenSSH client config consulted for the host
	// (see docs/node-file.md, "ssh_config"). "" means ~/.ssh/config (a missing file is
	// fine); "none" (NoSSHConfig) disables it. Explicit fields of this
	// Config win over it; it only fills gaps.
	SSHConfigFile string
	// DialTimeout bounds TCP connect plus SSH handshake and auth
	// (default 15s).
	DialTimeout time.Duration
	// KeepAliveInterval is the keepalive@openssh.com period (default 15s;
	// negative disables): a keepalive is sent after an interval in which
	// nothing arrived, and the connection is closed after three intervals
	// in which nothing did, as OpenSSH's ServerAliveInterval and
	// ServerAliveCountMax.
	KeepAliveInterval time.Duration
	// StallTimeout is how long an upload may send nothing before its
	// connection is abandoned and the upload retried once on a new one
	// (default DefaultStallTimeout). Keepalives catch a dead link; this
	// catches a live one that no longer moves data.
	StallTimeout time.Duration
	// Passphrase is asked for an encrypted key's passphrase when
	// SWDT_KEY_PASSPHRASE is unset, for example a terminal prompt. Nil
	// means no prompt.
	Passphrase func(keyFile string) ([]byte, error)
	// Logger receives debug detail; nil discards.
	Logger *slog.Logger
	// Warn receives warnings the user must see (insecure host key policy,
	// ssh config directives swdt ignores); the caller routes it to the
	// terminal. Nil drops them to Logger.
	Warn func(msg string)
}

// Host key policies (Config.HostKeyPolicy).
const (
	// PolicyStrict refuses hosts that are unknown or whose key changed.
	PolicyStrict = "strict"
	// PolicyAcceptNew records unknown hosts and refuses changed keys.
	PolicyAcceptNew = "accept-new"
	// PolicyInsecure accepts any key.
	PolicyInsecure = "insecure"
	// DefaultPolicy applies when neither the Config nor the ssh config
	// sets one.
	DefaultPolicy = PolicyAcceptNew
	// DefaultKnownHostsFile applies when neither the Config nor the ssh
	// config names one.
	DefaultKnownHostsFile = "~/.ssh/known_hosts"
)

func checkPolicy(p string) error {
	switch p {
	case PolicyStrict, PolicyAcceptNew, PolicyInsecure:
		return nil
	}
	return fmt.Errorf("unknown host key policy %q (want strict, accept-new or insecure)", p)
}

// hop is one SSH server with every gap filled from the ssh config and
// the defaults.
type hop struct {
	name        string // as written: a Host alias or an address, for messages
	addr        string // host:port dialled and checked in known_hosts
	user        string
	keyFiles    []string
	keyExplicit bool // keyFiles came from the Config or ssh config, not defaults
	// knownHosts are checked in order; a new key is recorded in the first.
	knownHosts []string
	policy     string
	// policyWhy says where the policy comes from, for messages, e.g.
	// "StrictHostKeyChecking is yes in /home/me/.ssh/config".
	policyWhy string
	// proxyCommand, expanded, carries the connection instead of TCP.
	// Only the first hop of a route may have one.
	proxyCommand string
}

// maxHops bounds a route, so that jump hosts whose ProxyJump name each
// other are an error rather than a hang.
const maxHops = 10

// target is the node's hop and how to reach it.
type target struct {
	hop
	// via are the jump hosts in the order they are dialled: via[0]
	// directly or by its ProxyCommand, each next one through the one
	// before it, and the node through the last.
	via         []hop
	dialTimeout time.Duration
	keepAlive   time.Duration
	// ignored is the warning about ssh config directives set for the node
	// that swdt does not support; "" when there are none.
	ignored string
}

// resolve fills gaps from the ssh config file and defaults. Explicit
// fields of cfg win over the ssh config.
func resolve(cfg Config) (target, error) {
	t := target{dialTimeout: cfg.DialTimeout, keepAlive: cfg.KeepAliveInterval}
	if t.dialTimeout <= 0 {
		t.dialTimeout = DefaultDialTimeout
	}
	if t.keepAlive == 0 {
		t.keepAlive = DefaultKeepAliveInterval
	}
	if cfg.HostKeyPolicy != "" {
		if err := checkPolicy(cfg.HostKeyPolicy); err != nil {
			return t, err
		}
	}
	host, port, err := splitHost(cfg.Host)
	if err != nil {
		return t, err
	}
	sc, err := loadSSHConfig(cfg.SSHConfigFile)
	if err != nil {
		return t, err
	}
	t.hop, err = sc.resolveHop(cfg, host, cfg.User, port, cfg.PrivateKeyFile)
	if err != nil {
		return t, err
	}
	if t.via, err = sc.reach(cfg, &t.hop, 1); err != nil {
		return t, err
	}
	var ignored []string
	for _, h := range t.route() {
		if ign := sc.unsupported(h.name); len(ign) > 0 {
			ignored = append(ignored, fmt.Sprintf("%s for %s", strings.Join(ign, ", "), h.name))
		}
	}
	if len(ignored) > 0 {
		t.ignored = fmt.Sprintf("%s sets %s, which swdt does not support: ignored (the ssh_config section of swdt's node file reference, docs/node-file.md, lists what swdt honours)",
			sc.file, strings.Join(ignored, "; "))
	}
	return t, nil
}

// route is every hop from the first dialled to the node.
func (t target) route() []hop {
	return append(slices.Clone(t.via), t.hop)
}

// reach finds how h is reached, as ssh would: by its ProxyCommand (set
// on h), or through the jump hosts of its ProxyJump (returned), whichever
// the ssh config gives first; none of either means directly. The first
// jump host is looked up with its own ProxyJump or ProxyCommand; the
// others are each reached through the one before. hops counts the hops
// of the route so far, h included.
func (sc *sshConfig) reach(cfg Config, h *hop, hops int) ([]hop, error) {
	key, val := sc.first(h.name, "ProxyJump", "ProxyCommand")
	if key == "" || strings.EqualFold(val, "none") {
		return nil, nil
	}
	if key == "ProxyCommand" {
		cmd, err := proxyCommand(val, *h)
		if err != nil {
			return nil, fmt.Errorf("%s for %s: %w", sc.file, h.name, err)
		}
		h.proxyCommand = cmd
		return nil, nil
	}
	jumps, err := parseProxyJump(val)
	if err != nil {
		return nil, fmt.Errorf("%s, ProxyJump for %s: %w", sc.file, h.name, err)
	}
	if hops += len(jumps); hops > maxHops {
		return nil, fmt.Errorf("%s: the ProxyJump chain to %s is longer than %d hops: do two hosts name each other?", sc.file, h.name, maxHops)
	}
	var via []hop
	for i, j := range jumps {
		jh, err := sc.resolveHop(cfg, j.host, j.user, j.port, "")
		if err != nil {
			return nil, fmt.Errorf("jump host %s (ProxyJump for %s): %w", j.host, h.name, err)
		}
		if i == 0 {
			before, err := sc.reach(cfg, &jh, hops)
			if err != nil {
				return nil, err
			}
			via = append(via, before...)
		}
		via = append(via, jh)
	}
	return via, nil
}

// proxyCommand expands the tokens of a ProxyCommand for h. Each value is
// quoted for the shell that runs the command (quoteToken), so that it
// stays one word whatever it holds; names were checked already
// (resolveHop), quoting is the second wall.
func proxyCommand(val string, h hop) (string, error) {
	host, port, _ := net.SplitHostPort(h.addr)
	return expandTokens("ProxyCommand", val, map[byte]string{
		'h': quoteToken(host), 'p': quoteToken(port), 'r': quoteToken(h.user), 'n': quoteToken(h.name),
	})
}

// jumpSpec is one entry of a ProxyJump list.
type jumpSpec struct{ user, host, port string }

// parseProxyJump reads a ProxyJump value: a comma-separated list of
// [user@]host[:port] or ssh://[user@]host[:port].
func parseProxyJump(v string) ([]jumpSpec, error) {
	var out []jumpSpec
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		s := strings.TrimPrefix(e, "ssh://")
		var j jumpSpec
		if i := strings.LastIndex(s, "@"); i >= 0 {
			j.user, s = s[:i], s[i+1:]
		}
		var err error
		j.host, j.port, err = splitHost(s)
		if err != nil || strings.EqualFold(e, "none") || strings.ContainsAny(e, " \t") || (j.user == "" && strings.Contains(e, "@")) {
			return nil, fmt.Errorf("%q is not [user@]host[:port] (in the list %q)", e, v)
		}
		out = append(out, j)
	}
	return out, nil
}

// resolveHop fills in one host as ssh would, looking alias up in the ssh
// config. user, port and keyFile win over it when set; so do cfg's
// KnownHostsFile and HostKeyPolicy.
func (sc *sshConfig) resolveHop(cfg Config, alias, user, port, keyFile string) (hop, error) {
	h := hop{name: alias, user: user}
	// Names are checked as OpenSSH's client checks them, wherever they
	// come from, before anything (a ProxyCommand) can use them.
	if err := sshname.Host(alias); err != nil {
		return h, fmt.Errorf("host %q: %w", alias, err)
	}
	host := alias
	if hn := sc.get(alias, "HostName"); hn != "" {
		var err error
		if host, err = expandTokens("HostName", hn, map[byte]string{'h': alias}); err != nil {
			return h, err
		}
		if err := sshname.Host(host); err != nil {
			return h, fmt.Errorf("%s: HostName %q for %s: %w", sc.file, host, alias, err)
		}
	}
	if port == "" {
		port = sc.get(alias, "Port")
	}
	if port == "" {
		port = "22"
	}
	if err := sshname.Port(port); err != nil {
		return h, fmt.Errorf("host %q: %w", alias, err)
	}
	if h.user == "" {
		h.user = sc.get(alias, "User")
	}
	if h.user == "" {
		h.user = localUser()
	}
	if h.user == "" {
		return h, fmt.Errorf("host %q: no user given: set username in the node file or User in the ssh config", alias)
	}
	if err := sshname.User(h.user); err != nil {
		return h, fmt.Errorf("host %q: user %q: %w", alias, h.user, err)
	}
	h.addr = net.JoinHostPort(host, port)
	tokens := map[byte]string{'d': homeDir(), 'u': localUser(), 'h': host, 'n': alias, 'p': port, 'r': h.user}

	if keyFile != "" {
		h.keyFiles, h.keyExplicit = []string{expandHome(keyFile)}, true
	} else {
		for _, id := range sc.getAll(alias, "IdentityFile") {
			id, err := expandTokens("IdentityFile", id, tokens)
			if err != nil {
				return h, err
			}
			h.keyFiles, h.keyExplicit = append(h.keyFiles, expandHome(id)), true
		}
	}
	if len(h.keyFiles) == 0 {
		for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			h.keyFiles = append(h.keyFiles, filepath.Join(homeDir(), ".ssh", n))
		}
	}

	switch ukh := sc.get(alias, "UserKnownHostsFile"); {
	case cfg.KnownHostsFile != "":
		h.knownHosts = []string{expandHome(cfg.KnownHostsFile)}
	case ukh != "":
		for _, f := range strings.Fields(ukh) {
			if strings.EqualFold(f, "none") {
				f = os.DevNull
			}
			f, err := expandTokens("UserKnownHostsFile", f, tokens)
			if err != nil {
				return h, err
			}
			h.knownHosts = append(h.knownHosts, expandHome(f))
		}
	default:
		h.knownHosts = []string{expandHome(DefaultKnownHostsFile)}
	}

	switch shkc := sc.get(alias, "StrictHostKeyChecking"); {
	case cfg.HostKeyPolicy != "":
		h.policy, h.policyWhy = cfg.HostKeyPolicy, "hostKeyPolicy is "+cfg.HostKeyPolicy
	case shkc != "":
		var err error
		if h.policy, h.policyWhy, err = policyFromSSHConfig(shkc, sc.file); err != nil {
			return h, err
		}
	default:
		h.policy = DefaultPolicy
		h.policyWhy = "hostKeyPolicy is " + h.policy
	}
	return h, nil
}

// policyFromSSHConfig maps StrictHostKeyChecking to a host key policy.
// swdt never prompts, so ask is yes: unknown hosts are refused.
func policyFromSSHConfig(v, file string) (policy, why string, err error) {
	why = fmt.Sprintf("StrictHostKeyChecking is %s in %s", v, file)
	switch strings.ToLower(v) {
	case "yes", "true":
		return PolicyStrict, why, nil
	case "ask":
		return PolicyStrict, why + ", which swdt treats as yes because it never prompts", nil
	case "accept-new":
		return PolicyAcceptNew, why, nil
	case "no", "off", "false":
		return PolicyInsecure, why + " (swdt's hostKeyPolicy insecure)", nil
	}
	return "", "", fmt.Errorf("StrictHostKeyChecking %q in %s is not one of yes, accept-new, no or ask: fix it there, or set hostKeyPolicy in the node file", v, file)
}

// expandTokens replaces the %-tokens of an ssh config value, as ssh does.
// A token swdt does not know is an error rather than a wrong path.
func expandTokens(directive, v string, tokens map[byte]string) (string, error) {
	if !strings.Contains(v, "%") {
		return v, nil
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			b.WriteByte(v[i])
			continue
		}
		if i+1 == len(v) {
			return "", fmt.Errorf("%s %q: a lone %% at the end (write %%%% for a %%)", directive, v)
		}
		i++
		if v[i] == '%' {
			b.WriteByte('%')
			continue
		}
		val, ok := tokens[v[i]]
		if !ok {
			known := make([]string, 0, len(tokens)+1)
			for k := range tokens {
				known = append(known, "%"+string(k))
			}
			slices.Sort(known)
			return "", fmt.Errorf("%s %q: swdt does not expand %%%c here (it knows %s and %%%%)", directive, v, v[i], strings.Join(known, " "))
		}
		b.WriteString(val)
	}
	return b.String(), nil
}

// splitHost splits host[:port], [v6]:port, [v6] or a bare IPv6 address.
func splitHost(s string) (host, port string, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", "", errors.New("no host given")
	}
	switch {
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		return s[1 : len(s)-1], "", nil
	case strings.HasPrefix(s, "["):
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return "", "", fmt.Errorf("host %q: %w", s, err)
		}
		return h, p, nil
	case strings.Count(s, ":") == 1:
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return "", "", fmt.Errorf("host %q: %w", s, err)
		}
		if h == "" {
			return "", "", fmt.Errorf("host %q: empty host name", s)
		}
		return h, p, nil
	}
	return s, "", nil // a name, IPv4 address or bare IPv6 address
}

// sshConfig is the parsed ssh config file; a nil *sshConfig (no file, or
// NoSSHConfig) answers every lookup with nothing.
type sshConfig struct {
	c    *ssh_config.Config
	file string
}

func loadSSHConfig(file string) (*sshConfig, error) {
	if file == NoSSHConfig {
		return nil, nil
	}
	explicit := file != ""
	if !explicit {
		file = filepath.Join(homeDir(), ".ssh", "config")
	}
	file = expandHome(file)
	f, err := os.Open(file)
	if err != nil {
		if !explicit && errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("ssh config: %w", err)
	}
	defer f.Close()
	c, err := ssh_config.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("ssh config %s: %w", file, err)
	}
	return &sshConfig{c: c, file: file}, nil
}

// get is the first value of key for alias, as ssh takes it.
func (sc *sshConfig) get(alias, key string) string {
	if sc == nil {
		return ""
	}
	v, _ := sc.c.Get(alias, key)
	return strings.TrimSpace(v)
}

// first returns whichever of keys the ssh config sets first for alias,
// with its value (as ssh, where the first of ProxyJump and ProxyCommand
// wins). Within one Include'd file, keys are tried in the order given.
func (sc *sshConfig) first(alias string, keys ...string) (key, value string) {
	if sc == nil {
		return "", ""
	}
	for _, h := range sc.c.Hosts {
		if !h.Matches(alias) {
			continue
		}
		for _, n := range h.Nodes {
			for _, k := range keys {
				switch n := n.(type) {
				case *ssh_config.KV:
					if strings.EqualFold(n.Key, k) {
						return k, strings.TrimSpace(n.Value)
					}
				case *ssh_config.Include:
					if v := n.Get(alias, k); v != "" {
						return k, strings.TrimSpace(v)
					}
				}
			}
		}
	}
	return "", ""
}

// getAll is every value of a key that may repeat (IdentityFile).
func (sc *sshConfig) getAll(alias, key string) []string {
	if sc == nil {
		return nil
	}
	v, _ := sc.c.GetAll(alias, key)
	return v
}

// localUser is the local account name, as ssh's default login name: $USER,
// else the account the process runs as (without a Windows domain).
func localUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	u, err := user.Current()
	if err != nil {
		return ""
	}
	return u.Username[strings.LastIndex(u.Username, `\`)+1:]
}

func homeDir() string {
	h, err := os.UserHomeDir()
	if err != nil {
		return "."
	}
	return h
}

func expandHome(p string) string {
	if p == "~" {
		return homeDir()
	}
	if strings.HasPrefix(p, "~/") {
		return filepath.Join(homeDir(), p[2:])
	}
	return p
}
