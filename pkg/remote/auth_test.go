package remote

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// startAgent serves an in-process ssh-agent holding keyFile on a temp
// socket and points SSH_AUTH_SOCK at it.
func startAgent(t *testing.T, keyFile string) {
	t.Helper()
	pem, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.ParseRawPrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	kr := agent.NewKeyring()
	if err := kr.Add(agent.AddedKey{PrivateKey: key}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _ = agent.ServeAgent(kr, c) }()
		}
	}()
	t.Setenv("SSH_AUTH_SOCK", sock)
}

func TestAuthAgainstSSHD(t *testing.T) {
	s := sshdtest.Start(t)
	tests := []struct {
		name    string
		setup   func(t *testing.T, cfg *Config)
		wantErr func(t *testing.T, err error)
	}{
		{name: "key", setup: func(t *testing.T, cfg *Config) {}},
		{name: "passphrase key from env", setup: func(t *testing.T, cfg *Config) {
			cfg.PrivateKeyFile = s.PassphraseKeyFile
			t.Setenv(PassphraseEnv, sshdtest.Passphrase)
		}},
		{name: "passphrase key from prompt", setup: func(t *testing.T, cfg *Config) {
			cfg.PrivateKeyFile = s.PassphraseKeyFile
			cfg.Passphrase = func(f string) ([]byte, error) {
				if f != s.PassphraseKeyFile {
					t.Errorf("prompt for %q, want %q", f, s.PassphraseKeyFile)
				}
				return []byte(sshdtest.Passphrase), nil
			}
		}},
		{name: "agent", setup: func(t *testing.T, cfg *Config) {
			cfg.PrivateKeyFile = ""
			startAgent(t, s.KeyFile)
		}},
		{name: "agent holds the passphrase key: no prompt", setup: func(t *testing.T, cfg *Config) {
			cfg.PrivateKeyFile = s.PassphraseKeyFile
			cfg.Passphrase = func(string) ([]byte, error) {
				t.Error("prompted although the agent holds the key")
				return nil, errors.New("no")
			}
			// The agent gets the decrypted key.
			pem, _ := os.ReadFile(s.PassphraseKeyFile)
			raw, err := ssh.ParseRawPrivateKeyWithPassphrase(pem, []byte(sshdtest.Passphrase))
			if err != nil {
				t.Fatal(err)
			}
			plain := filepath.Join(t.TempDir(), "plain")
			block, _ := ssh.MarshalPrivateKey(raw, "")
			writePEM(t, plain, block.Bytes, block.Type)
			startAgent(t, plain)
		}},
		{name: "wrong key", setup: func(t *testing.T, cfg *Config) {
			cfg.PrivateKeyFile = s.UnauthorizedKeyFile
		}, wantErr: func(t *testing.T, err error) {
			var ae *AuthError
			if !errors.As(err, &ae) {
				t.Fatalf("want *AuthError, got %T: %v", err, err)
			}
			for _, want := range []string{s.User + "@" + s.Addr, "publickey", s.UnauthorizedKeyFile} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		}},
		{name: "wrong key, password not accepted by sshd", setup: func(t *testing.T, cfg *Config) {
			cfg.PrivateKeyFile = s.UnauthorizedKeyFile
			cfg.Password = "hunter2"
		}, wantErr: func(t *testing.T, err error) {
			var ae *AuthError
			if !errors.As(err, &ae) || len(ae.Tried) != 1 || len(ae.NotTried) != 2 {
				t.Fatalf("want publickey tried, password methods not tried; got %#v", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error leaks the password: %v", err)
			}
		}},
		{name: "wrong passphrase", setup: func(t *testing.T, cfg *Config) {
			cfg.PrivateKeyFile = s.PassphraseKeyFile
			t.Setenv(PassphraseEnv, "nope")
		}, wantErr: func(t *testing.T, err error) {
			var pe *PrivateKeyError
			if !errors.Is(err, ErrWrongPassphrase) || !errors.As(err, &pe) || pe.Path != s.PassphraseKeyFile {
				t.Fatalf("want wrong passphrase for %s, got %v", s.PassphraseKeyFile, err)
			}
		}},
		{name: "passphrase key without a passphrase", setup: func(t *testing.T, cfg *Config) {
			cfg.PrivateKeyFile = s.PassphraseKeyFile
		}, wantErr: func(t *testing.T, err error) {
			if !strings.Contains(err.Error(), PassphraseEnv) {
				t.Fatalf("error %q does not say how to give the passphrase", err)
			}
		}},
		{name: "no credentials at all", setup: func(t *testing.T, cfg *Config) {
			cfg.PrivateKeyFile = ""
		}, wantErr: func(t *testing.T, err error) {
			var ae *AuthError
			if !errors.As(err, &ae) || !strings.Contains(err.Error(), "tried: none") {
				t.Fatalf("want *AuthError naming no methods, got %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := sshdConfig(t, s)
			tt.setup(t, &cfg)
			c, err := Dial(t.Context(), cfg)
			if tt.wantErr != nil {
				if err == nil {
					c.Close()
					t.Fatal("Dial succeeded, want an error")
				}
				tt.wantErr(t, err)
				return
			}
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer c.Close()
			var out strings.Builder
			if code, err := c.Exec(t.Context(), "echo ok", nil, &out, nil); err != nil || code != 0 || out.String() != "ok\n" {
				t.Fatalf("Exec = %d, %q, %v", code, out.String(), err)
			}
		})
	}
}

func writePEM(t *testing.T, path string, b []byte, typ string) {
	t.Helper()
	if err := os.WriteFile(path, pemEncode(typ, b), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestPasswordAuth(t *testing.T) {
	tests := []struct {
		name     string
		password string
		kbdOnly  bool
		ok       bool
	}{
		{name: "password", password: "s3cret", ok: true},
		{name: "keyboard-interactive", password: "s3cret", kbdOnly: true, ok: true},
		{name: "wrong password", password: "guess"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := sshdtest.StartGoServer(t, "Administrator", "s3cret")
			srv.KeyboardInteractiveOnly.Store(tt.kbdOnly)
			cfg := Config{
				Host: srv.Addr, User: "Administrator", Password: tt.password,
				KnownHostsFile: filepath.Join(t.TempDir(), "known_hosts"),
				SSHConfigFile:  NoSSHConfig,
			}
			c, err := Dial(t.Context(), cfg)
			if !tt.ok {
				var ae *AuthError
				if !errors.As(err, &ae) {
					t.Fatalf("want *AuthError, got %v", err)
				}
				for _, want := range []string{"Administrator@" + srv.Addr, "password", "keyboard-interactive"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q lacks %q", err, want)
					}
				}
				if strings.Contains(err.Error(), tt.password) {
					t.Errorf("error %q leaks the password", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer c.Close()
			var out strings.Builder
			if _, err := c.Exec(t.Context(), "whoami", nil, &out, nil); err != nil || out.String() != "whoami" {
				t.Fatalf("Exec = %q, %v", out.String(), err)
			}
		})
	}
}

func TestSSHConfigAlias(t *testing.T) {
	s := sshdtest.Start(t)
	dir := t.TempDir()
	sc := filepath.Join(dir, "config")
	content := "Host winnode\n  HostName 127.0.0.1\n  Port " + itoa(s.Port) + "\n  User " + s.User + "\n  IdentityFile " + s.KeyFile + "\n"
	if err := os.WriteFile(sc, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Host: "winnode", SSHConfigFile: sc, KnownHostsFile: filepath.Join(dir, "known_hosts")}
	c := dial(t, cfg)
	if c.Addr() != s.Addr || c.User() != s.User {
		t.Fatalf("resolved %s@%s, want %s@%s", c.User(), c.Addr(), s.User, s.Addr)
	}

	// Explicit fields win over the ssh config.
	cfg.User = "nobody-explicit"
	cfg.PrivateKeyFile = s.UnauthorizedKeyFile
	_, err := Dial(t.Context(), cfg)
	var ae *AuthError
	if !errors.As(err, &ae) || ae.User != "nobody-explicit" || !strings.Contains(err.Error(), s.UnauthorizedKeyFile) {
		t.Fatalf("explicit user and key did not win: %v", err)
	}
}

func TestSplitHost(t *testing.T) {
	tests := []struct{ in, host, port string }{
		{"192.168.1.5", "192.168.1.5", ""},
		{"192.168.1.5:2222", "192.168.1.5", "2222"},
		{"node", "node", ""},
		{"[fe80::1]:22", "fe80::1", "22"},
		{"[fe80::1]", "fe80::1", ""},
		{"fe80::1", "fe80::1", ""},
	}
	for _, tt := range tests {
		h, p, err := splitHost(tt.in)
		if err != nil || h != tt.host || p != tt.port {
			t.Errorf("splitHost(%q) = %q, %q, %v", tt.in, h, p, err)
		}
	}
}

// TestPasswordEnvFallback: a passwordEnv variable that is unset or empty
// is no error, and no warning, while a key or ssh-agent can log in; it is
// an error naming the variable and the node file when nothing can, and
// the authentication error names it when the keys are refused.
func TestPasswordEnvFallback(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithPassword("s3cret"))
	tests := []struct {
		name string
		// env is the variable's value; nil leaves it unset.
		env   *string
		key   bool
		agent bool
		// refused: the node does not know the key.
		refused bool
		wantErr string
		// wantWarning is "" when no warning may come.
		wantWarning string
	}{
		{name: "set: the password logs in", env: ptr("s3cret")},
		{name: "set, and a key: no warning", env: ptr("s3cret"), key: true},
		{name: "unset, a key: no warning", key: true},
		{name: "empty, ssh-agent: no warning", env: ptr(""), agent: true},
		{name: "unset, a key the node refuses", key: true, refused: true, wantErr: "no password was tried: SWDT_TEST_PW is unset (credentials.passwordEnv)"},
		{name: "unset, nothing else", wantErr: "SWDT_TEST_PW is unset (credentials.passwordEnv in /nodes/win.yaml), and there is no private key or ssh-agent key to log in with instead: export SWDT_TEST_PW"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env != nil {
				t.Setenv("SWDT_TEST_PW", *tt.env)
			} else {
				t.Setenv("SWDT_TEST_PW", "")
				os.Unsetenv("SWDT_TEST_PW")
			}
			spec := ts.Credentials()
			spec.PrivateKey, spec.PasswordEnv = "", "SWDT_TEST_PW"
			if tt.key {
				spec.PrivateKey = ts.KeyFile
			}
			if tt.refused {
				spec.PrivateKey = filepath.Join(t.TempDir(), "stranger")
				writeKey(t, spec.PrivateKey)
			}
			if tt.agent {
				startAgent(t, ts.KeyFile)
			}
			cfg := Config{Host: spec.Hostname, User: spec.Username, PrivateKeyFile: spec.PrivateKey, KnownHostsFile: spec.KnownHostsFile,
				HostKeyPolicy: string(spec.HostKeyPolicy), PasswordEnv: spec.PasswordEnv, Password: os.Getenv(spec.PasswordEnv)}
			var warnings []string
			cfg.SSHConfigFile, cfg.NodeFile = NoSSHConfig, "/nodes/win.yaml"
			cfg.Warn = func(m string) { warnings = append(warnings, m) }
			c, err := Dial(t.Context(), cfg)
			if tt.wantErr != "" {
				var pe *PasswordUnsetError
				var ae *AuthError
				if !errors.As(err, &pe) && !errors.As(err, &ae) || err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want a *PasswordUnsetError or *AuthError with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer c.Close()
			if _, err := c.Stat(t.Context(), `C:\k\kubelet.exe`); err != nil {
				t.Fatal(err)
			}
			if tt.wantWarning == "" && len(warnings) > 0 || tt.wantWarning != "" && !slices.Equal(warnings, []string{tt.wantWarning}) {
				t.Errorf("warnings = %q, want %q", warnings, tt.wantWarning)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
