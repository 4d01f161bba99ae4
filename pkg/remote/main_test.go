package remote

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/sshdtest"
)

// TestMain isolates the tests from the developer's own ssh setup: no agent,
// no default keys, no passphrase in the environment. With ncLogEnv set,
// the test binary is a ProxyCommand instead (see runNC).
func TestMain(m *testing.M) {
	if log := os.Getenv(ncLogEnv); log != "" {
		os.Exit(runNC(log, os.Args[1:]))
	}
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

// The test binary re-executed as a ProxyCommand: runNC is a netcat that
// knows its routes from ncRouteEnv ("name:port=addr,..."), so that a
// target can be given a name only the ProxyCommand resolves.
const (
	ncLogEnv   = "SWDT_REMOTE_TEST_NC_LOG"
	ncRouteEnv = "SWDT_REMOTE_TEST_NC_ROUTES"
)

// runNC appends its PID and arguments (host port ...) to the file log,
// connects to the route for host:port and copies stdin and stdout to it
// until the server closes the connection.
// An unknown destination fails with exit status 3.
func runNC(log string, args []string) int {
	if f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		fmt.Fprintf(f, "%d %s\n", os.Getpid(), strings.Join(args, " "))
		f.Close()
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: host port ...")
		return 2
	}
	dest := net.JoinHostPort(args[0], args[1])
	var to string
	for _, r := range strings.Split(os.Getenv(ncRouteEnv), ",") {
		if name, addr, ok := strings.Cut(r, "="); ok && name == dest {
			to = addr
		}
	}
	if to == "" {
		fmt.Fprintf(os.Stderr, "nc: no route to %s\n", dest)
		return 3
	}
	c, err := net.Dial("tcp", to)
	if err != nil {
		fmt.Fprintf(os.Stderr, "nc: %v\n", err)
		return 1
	}
	// Like nc without -N: the end of stdin does not end the connection,
	// so only a kill stops it while the server keeps it open.
	go func() { _, _ = io.Copy(c, os.Stdin) }()
	_, _ = io.Copy(os.Stdout, c)
	return 0
}
