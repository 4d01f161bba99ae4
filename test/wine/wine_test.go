// Package wine runs swdt against simnode's Wine mode: the real
// swdt-agent.exe and real Windows programs (cross-built by the tests)
// under Wine, an implementation of Win32 that nobody here wrote. The
// tests skip when Wine or mingw-w64 is missing (make test-deps installs
// them) and fail then under CI=true.
package wine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/swdt/cmd/swdt/app"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// shared is what every test of the binary uses: one booted prefix that
// each node copies, and the Windows programs, built once.
var shared struct {
	once      sync.Once
	err       error
	dir       string
	template  string
	winsvc    []byte
	fakewins  []byte
	fakechoco []byte
}

// runAsSwdt makes the test binary run as swdt itself (its arguments after
// the program name), for tests that must kill a real swdt process.
const runAsSwdt = "SWDT_WINE_TEST_RUN_AS_SWDT"

func TestMain(m *testing.M) {
	if os.Getenv(runAsSwdt) == "1" {
		os.Exit(app.Run(context.Background(), app.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:]))
	}
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// setup boots the template prefix and builds the programs, once.
func setup(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("the Wine tier boots a Wine prefix and takes minutes: run it without -short")
	}
	if missing := simnode.WineMissing(); len(missing) > 0 {
		msg := fmt.Sprintf("Wine tests need %s (make test-deps installs them)", strings.Join(missing, ", "))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "swdt-wine-test-")
		if shared.err != nil {
			return
		}
		shared.template = filepath.Join(shared.dir, "prefix")
		if shared.err = simnode.BootWinePrefix(context.Background(), shared.template); shared.err != nil {
			return
		}
		if shared.winsvc, shared.err = buildWindows(filepath.Join(shared.dir, "winsvc.exe"), "./testdata/winsvc"); shared.err != nil {
			return
		}
		if shared.fakewins, shared.err = buildWindows(filepath.Join(shared.dir, "fakewins.exe"), "./testdata/fakewins"); shared.err != nil {
			return
		}
		shared.fakechoco, shared.err = buildWindows(filepath.Join(shared.dir, "fakechoco.exe"), "./testdata/fakechoco")
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
}

// buildWindows cross-builds a Go program for windows/amd64.
func buildWindows(out, pkg string) ([]byte, error) {
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build %s: %w\n%s", pkg, err, b)
	}
	return os.ReadFile(out)
}

// node is a simnode in the Wine mode with a node file of its own.
type node struct {
	t      *testing.T
	ts     *simnode.TestServer
	dir    string
	config string
}

func newNode(t *testing.T) *node {
	t.Helper()
	setup(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	return &node{t: t, ts: simnode.StartTest(t, simnode.WithWine(shared.template)), dir: t.TempDir()}
}

// writeConfig writes the node file: the header and spec (indented under
// spec:).
func (n *node) writeConfig(spec string) {
	n.t.Helper()
	c := n.ts.Credentials()
	yaml := fmt.Sprintf(`apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: wine
spec:
  credentials:
    hostname: %q
    username: %s
    privateKey: %q
    knownHostsFile: %q
    hostKeyPolicy: strict
`, c.Hostname, c.Username, c.PrivateKey, c.KnownHostsFile) + spec
	n.config = filepath.Join(n.dir, "node.yaml")
	if err := os.WriteFile(n.config, []byte(yaml), 0o600); err != nil {
		n.t.Fatal(err)
	}
}

// winsvc writes a variant of the test service program into the node
// file's directory (see testdata/winsvc for the settings).
func (n *node) winsvc(name, settings string) {
	n.t.Helper()
	n.write(name, append(append([]byte(nil), shared.winsvc...), "\nwinsvc:"+settings+"\n"...))
}

// write writes a file into the node file's directory.
func (n *node) write(name string, content []byte) {
	n.t.Helper()
	if err := os.WriteFile(filepath.Join(n.dir, name), content, 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// swdt runs swdt in-process with the node file.
func (n *node) swdt(args ...string) (int, string, string) {
	n.t.Helper()
	var out, errOut bytes.Buffer
	cmd, rest := args[0], args[1:]
	code := app.Run(context.Background(), app.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		append([]string{cmd, "-c", n.config, "--no-color"}, rest...))
	n.t.Logf("swdt %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}
