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
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/swdt/cmd/swdt/app"
	"sigs.k8s.io/swdt/internal/winetest"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// shared are the Windows programs every test of the binary uses, built
// once; the booted prefix each node copies is winetest's.
var shared struct {
	once      sync.Once
	err       error
	dir       string
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
	winetest.Cleanup()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// setup boots the template prefix and builds the programs, once.
func setup(t *testing.T) {
	t.Helper()
	winetest.Require(t)
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "swdt-wine-test-"); shared.err != nil {
			return
		}
		for _, p := range []struct {
			out *[]byte
			pkg string
		}{{&shared.winsvc, "./testdata/winsvc"}, {&shared.fakewins, "./testdata/fakewins"}, {&shared.fakechoco, "./testdata/fakechoco"}} {
			exe := filepath.Join(shared.dir, filepath.Base(p.pkg)+".exe")
			if shared.err = winetest.BuildWindows(exe, p.pkg, false); shared.err != nil {
				return
			}
			if *p.out, shared.err = os.ReadFile(exe); shared.err != nil {
				return
			}
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
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
	return &node{t: t, ts: simnode.StartTest(t, simnode.WithWine(winetest.Template(t))), dir: t.TempDir()}
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
