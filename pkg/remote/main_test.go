package remote

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/sshdtest"
)

// TestMain isolates the tests from the developer's own ssh setup: no agent,
// no default keys, no passphrase in the environment.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "swdt-remote-home")
	if err != nil {
		panic(err)
	}
	os.Setenv("HOME", home)
	os.Unsetenv("SSH_AUTH_SOCK")
	os.Unsetenv(PassphraseEnv)
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// sshdConfig is a Config for the fixture's server with the plain key.
func sshdConfig(t testing.TB, s *sshdtest.Server) Config {
	return Config{
		Host:              s.Addr,
		User:              s.User,
		PrivateKeyFile:    s.KeyFile,
		KnownHostsFile:    filepath.Join(t.TempDir(), "known_hosts"),
		HostKeyPolicy:     "accept-new",
		SSHConfigFile:     NoSSHConfig,
		DialTimeout:       5 * time.Second,
		KeepAliveInterval: time.Second,
	}
}

func dial(t testing.TB, cfg Config) *Client {
	t.Helper()
	c, err := Dial(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
