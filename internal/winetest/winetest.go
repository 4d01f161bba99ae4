// Package winetest is what the tiers that run Windows programs under
// Wine share: the check that Wine is there (a skip, or a failure under
// CI=true), one booted Wine prefix per test binary (simnode's, with the
// DLLs Go programs need), a copy of it for each test with its own
// wineserver, and cross-builds of Go programs and test binaries.
package winetest

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

	"sigs.k8s.io/swdt/pkg/simnode"
)

// shared is the booted prefix every test of a binary copies.
var shared struct {
	once     sync.Once
	err      error
	dir      string
	template string
}

// Require skips t (fails it under CI=true) when Wine or mingw-w64 is
// missing, and under -short: a Wine tier takes minutes.
func Require(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("a Wine tier boots a Wine prefix and takes minutes: run it without -short")
	}
	if missing := simnode.WineMissing(); len(missing) > 0 {
		msg := fmt.Sprintf("Wine tests need %s (make test-deps installs them)", strings.Join(missing, ", "))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// Template returns the prefix booted once for the test binary (Require
// first). Cleanup removes it.
func Template(t *testing.T) string {
	t.Helper()
	Require(t)
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "swdt-winetest-"); shared.err != nil {
			return
		}
		shared.template = filepath.Join(shared.dir, "prefix")
		shared.err = simnode.BootWinePrefix(context.Background(), shared.template)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.template
}

// Cleanup removes the shared prefix; TestMain calls it after m.Run.
func Cleanup() {
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
}

// Prefix is a test's own copy of the template, with its own wineserver,
// ended when the test ends.
type Prefix struct {
	// Dir is the prefix; its C: drive is Dir/drive_c.
	Dir string
	t   *testing.T
}

// NewPrefix copies the template for t.
func NewPrefix(t *testing.T) *Prefix {
	t.Helper()
	tmpl := Template(t)
	dir := filepath.Join(t.TempDir(), "prefix")
	if out, err := exec.Command("cp", "-a", tmpl, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy the Wine prefix: %v: %s", err, out)
	}
	p := &Prefix{Dir: dir, t: t}
	t.Cleanup(func() {
		// Every Wine process of the prefix ends with its server.
		_ = p.Command(context.Background(), "wineserver", "-k").Run()
	})
	return p
}

// Env is the environment of a program run in the prefix, with extra
// variables (KEY=value) after it: Wine passes the environment on to
// Windows programs.
func (p *Prefix) Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "WINE") || k == "SSH_AUTH_SOCK" {
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "WINEPREFIX="+p.Dir, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml="), extra...)
}

// Command runs a Wine program (wine, wineserver) in the prefix.
func (p *Prefix) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = p.Env()
	cmd.Dir = filepath.Join(p.Dir, "drive_c")
	return cmd
}

// Path is the host path of a path on the prefix's C: drive (C:\x\y).
func (p *Prefix) Path(win string) string {
	rest := strings.TrimPrefix(strings.TrimPrefix(win, "C:"), "c:")
	return filepath.Join(p.Dir, "drive_c", filepath.FromSlash(strings.ReplaceAll(rest, `\`, "/")))
}

// WriteFile writes data at a path on the prefix's C: drive, creating its
// folders.
func (p *Prefix) WriteFile(win string, data []byte) {
	p.t.Helper()
	host := p.Path(win)
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(host, data, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// ReadFile reads a file on the prefix's C: drive.
func (p *Prefix) ReadFile(win string) ([]byte, error) { return os.ReadFile(p.Path(win)) }

// UserProfile is %USERPROFILE% in the prefix: C:\users\<the Unix user>.
func (p *Prefix) UserProfile() string {
	p.t.Helper()
	entries, err := os.ReadDir(p.Path(`C:\users`))
	if err != nil {
		p.t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.EqualFold(e.Name(), "Public") {
			return `C:\users\` + e.Name()
		}
	}
	p.t.Fatal("the Wine prefix has no user profile")
	return ""
}

// BuildWindows cross-builds a Go package (a program, or with test set a
// test binary: go test -c) for windows/amd64 into out.
func BuildWindows(out, pkg string, test bool) error {
	args := []string{"build", "-trimpath", "-o", out, pkg}
	if test {
		args = []string{"test", "-c", "-trimpath", "-o", out, pkg}
	}
	cmd := exec.Command("go", args...)
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("build %s for windows/amd64: %w\n%s", pkg, err, buf.Bytes())
	}
	return nil
}
