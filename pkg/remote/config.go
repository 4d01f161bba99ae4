package remote

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kevinburke/ssh_config"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
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
	// keepAliveCountMax keepalives may go unanswered before the connection
	// is declared dead (as OpenSSH's ServerAliveCountMax).
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
	// KnownHostsFile is where host keys are checked and, under accept-new,
	// recorded. Default ~/.ssh/known_hosts.
	KnownHostsFile string
	// HostKeyPolicy is "strict", "accept-new" or "insecure"; "" means
	// accept-new.
	HostKeyPolicy string
	// SSHConfigFile is the OpenSSH client config consulted for Host
	// aliases. "" means ~/.ssh/config (a missing file is fine); "none"
	// (NoSSHConfig) disables it. Explicit fields of this Config win over
	// it; it only fills gaps.
	SSHConfigFile string
	// DialTimeout bounds TCP connect plus SSH handshake and auth
	// (default 15s).
	DialTimeout time.Duration
	// KeepAliveInterval is the keepalive@openssh.com period (default 15s;
	// negative disables). Three unanswered keepalives close the connection.
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
	// Warn receives warnings the user must see (insecure host key policy);
	// the caller routes it to the terminal. Nil drops them to Logger.
	Warn func(msg string)
}

// ConfigFromSpec builds a Config from a node's credentials. The password
// comes from passwordEnv when it names a set variable, else from password;
// a passwordEnv that names an unset variable with no password to fall back
// to is an error. Paths are expected to be resolved by the config loader.
func ConfigFromSpec(spec v1alpha1.CredentialsSpec) (Config, error) {
	cfg := Config{
		Host:              spec.Hostname,
		User:              spec.Username,
		PrivateKeyFile:    spec.PrivateKey,
		KnownHostsFile:    spec.KnownHostsFile,
		HostKeyPolicy:     string(spec.HostKeyPolicy),
		DialTimeout:       DefaultDialTimeout,
		KeepAliveInterval: DefaultKeepAliveInterval,
	}
	if strings.TrimSpace(cfg.Host) == "" {
		return Config{}, errors.New("credentials.hostname is empty")
	}
	cfg.Password = spec.Password
	if spec.PasswordEnv != "" {
		if v, ok := os.LookupEnv(spec.PasswordEnv); ok && v != "" {
			cfg.Password = v
		} else if spec.Password == "" {
			return Config{}, fmt.Errorf("credentials.passwordEnv: environment variable %s is not set", spec.PasswordEnv)
		}
	}
	if cfg.HostKeyPolicy != "" {
		if err := checkPolicy(cfg.HostKeyPolicy); err != nil {
			return Config{}, fmt.Errorf("credentials.hostKeyPolicy: %w", err)
		}
	}
	return cfg, nil
}

func checkPolicy(p string) error {
	switch v1alpha1.HostKeyPolicy(p) {
	case v1alpha1.HostKeyPolicyStrict, v1alpha1.HostKeyPolicyAcceptNew, v1alpha1.HostKeyPolicyInsecure:
		return nil
	}
	return fmt.Errorf("unknown host key policy %q (want strict, accept-new or insecure)", p)
}

// target is a Config with every gap filled.
type target struct {
	addr        string // host:port dialled and checked in known_hosts
	user        string
	keyFiles    []string
	keyExplicit bool // keyFiles came from the Config or ssh config, not defaults
	knownHosts  string
	policy      string
	dialTimeout time.Duration
	keepAlive   time.Duration
}

// resolve fills gaps from the ssh config file and defaults.
func resolve(cfg Config) (target, error) {
	t := target{
		user:        cfg.User,
		knownHosts:  expandHome(cfg.KnownHostsFile),
		policy:      cfg.HostKeyPolicy,
		dialTimeout: cfg.DialTimeout,
		keepAlive:   cfg.KeepAliveInterval,
	}
	if t.policy == "" {
		t.policy = string(v1alpha1.DefaultHostKeyPolicy)
	}
	if err := checkPolicy(t.policy); err != nil {
		return t, err
	}
	if t.dialTimeout <= 0 {
		t.dialTimeout = DefaultDialTimeout
	}
	if t.keepAlive == 0 {
		t.keepAlive = DefaultKeepAliveInterval
	}
	host, port, err := splitHost(cfg.Host)
	if err != nil {
		return t, err
	}

	sc, err := loadSSHConfig(cfg.SSHConfigFile)
	if err != nil {
		return t, err
	}
	alias := host
	get := func(key string) string {
		if sc == nil {
			return ""
		}
		v, _ := sc.Get(alias, key)
		return strings.TrimSpace(v)
	}
	if hn := get("HostName"); hn != "" {
		host = strings.ReplaceAll(hn, "%h", alias)
	}
	if port == "" {
		port = get("Port")
	}
	if port == "" {
		port = "22"
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return t, fmt.Errorf("host %q: bad port %q", cfg.Host, port)
	}
	if t.user == "" {
		t.user = get("User")
	}
	if t.user == "" {
		t.user = os.Getenv("USER")
	}
	if t.user == "" {
		return t, fmt.Errorf("host %q: no user given", cfg.Host)
	}
	t.addr = net.JoinHostPort(host, port)

	switch {
	case cfg.PrivateKeyFile != "":
		t.keyFiles = []string{expandHome(cfg.PrivateKeyFile)}
		t.keyExplicit = true
	case sc != nil:
		ids, _ := sc.GetAll(alias, "IdentityFile")
		for _, id := range ids {
			id = strings.NewReplacer("%d", homeDir(), "%u", os.Getenv("USER"), "%h", host, "%r", t.user).Replace(id)
			t.keyFiles = append(t.keyFiles, expandHome(id))
			t.keyExplicit = true
		}
	}
	if len(t.keyFiles) == 0 {
		for _, n := range []string{"id_ed25519", "id_ecdsa", "id_rsa"} {
			t.keyFiles = append(t.keyFiles, filepath.Join(homeDir(), ".ssh", n))
		}
	}
	if t.knownHosts == "" {
		t.knownHosts = expandHome(v1alpha1.DefaultKnownHostsFile)
	}
	return t, nil
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

func loadSSHConfig(file string) (*ssh_config.Config, error) {
	if file == NoSSHConfig {
		return nil, nil
	}
	explicit := file != ""
	if !explicit {
		file = filepath.Join(homeDir(), ".ssh", "config")
	}
	f, err := os.Open(expandHome(file))
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
	return c, nil
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
