package wine

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
)

// wineDLL is the source of the DLLs simnode adds to Wine 8.0: the
// bcryptprimitives.dll it lacks, which Go 1.22+ Windows programs import
// (ProcessPrng), and a pdh.dll with the performance counters the kubelet
// reads, which Wine's own lacks.
//
//go:embed winedll/*.c winedll/*.def
var wineDLL embed.FS

// wineRegistry is what a Windows Server node's registry has and a new Wine
// prefix lacks, imported when the prefix boots: the update build
// revision (UBR), the hardware configuration id (HardwareConfig) and the
// boot id the kubelet for Windows reads; the time a service program has
// to connect to the service control manager, Windows' 30 s instead of
// Wine's 10 s (ServicesPipeTimeout, which both read; the kubelet loads its
// configuration first); and Wine's instruction to load simnode's pdh.dll
// instead of its own. %s is the configuration's GUID.
const wineRegistry = `REGEDIT4

[HKEY_LOCAL_MACHINE\SOFTWARE\Microsoft\Windows NT\CurrentVersion]
"UBR"=dword:00000d4d
"InstallationType"="Server"

[HKEY_LOCAL_MACHINE\SYSTEM\HardwareConfig]
"LastConfig"="{%s}"

[HKEY_LOCAL_MACHINE\SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management\PrefetchParameters]
"BootId"=dword:00000001

[HKEY_CURRENT_USER\Software\Wine\DllOverrides]
"pdh"="native"
`

// Wine makes the node run what it is asked to run under Wine instead of
// simulating it: its C: drive is the drive_c of a Wine prefix in the
// state directory (<state>/wine), the uploaded swdt-agent.exe runs under
// `wine` with the op's stdin, and services are real Windows service
// programs in Wine's service control manager, kept alive between ops by
// one persistent wineserver per node. See README.md for what this mode
// does not model.
type Wine struct {
	// Template is a prefix made by BootWinePrefix; a new state
	// directory's prefix is a copy of it (booting one takes about 15 s).
	// Empty boots a new prefix in the state directory.
	Template string
}

// wineTools are the programs the Wine mode needs, with the Debian
// package of each.
var wineTools = []struct{ name, pkg string }{
	{"wine", "wine"},
	{"wineserver", "wine"},
	{"wineboot", "wine"},
	{"x86_64-w64-mingw32-gcc", "gcc-mingw-w64-x86-64-win32"},
}

// WineMissing returns the Debian packages to install before the Wine
// mode can work (wine, wine64 and gcc-mingw-w64-x86-64-win32), or nil.
func WineMissing() []string {
	var missing []string
	for _, t := range wineTools {
		if _, err := exec.LookPath(t.name); err != nil && !slices.Contains(missing, t.pkg) {
			missing = append(missing, t.pkg)
		}
	}
	if slices.Contains(missing, "wine") {
		missing = append(missing, "wine64")
	}
	return missing
}

// wineEnv is the environment of every Wine program of the prefix: no
// debug output, and no offer to install Mono or Gecko.
func wineEnv(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "WINE") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "WINEPREFIX="+prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml=")
}

func wineCommand(ctx context.Context, prefix string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = wineEnv(prefix)
	cmd.Dir = filepath.Join(prefix, "drive_c")
	return cmd
}

func runWine(ctx context.Context, prefix, name string, args ...string) error {
	cmd := wineCommand(ctx, prefix, name, args...)
	cmd.Dir = ""
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// BootWinePrefix creates a Wine prefix in dir (which must not exist) as
// the Wine mode uses it: booted (wineboot, about 15 s, 700 MB), reporting
// Windows 10 (winecfg -v win10) with the registry values of wineRegistry,
// with the DLLs of winedll (bcryptprimitives.dll, which Go programs need,
// and pdh.dll, which the kubelet needs) built with mingw-w64, and with
// nothing of the host reachable: no Z: drive, and the user folders that
// Wine links to the home directory are plain folders.
func BootWinePrefix(ctx context.Context, dir string) error {
	if missing := WineMissing(); len(missing) > 0 {
		return fmt.Errorf("the Wine mode needs %s: install with apt-get install %s (or make test-deps)",
			strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err == nil {
		return fmt.Errorf("boot Wine prefix: %s already exists", dir)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("boot Wine prefix: %w", err)
	}
	if err := runWine(ctx, dir, "wineboot", "-i"); err != nil {
		return fmt.Errorf("boot Wine prefix %s: %w", dir, err)
	}
	if err := runWine(ctx, dir, "wine", "winecfg", "-v", "win10"); err != nil {
		return fmt.Errorf("boot Wine prefix %s: %w", dir, err)
	}
	reg := filepath.Join(dir, "drive_c", "simnode.reg")
	if err := os.WriteFile(reg, fmt.Appendf(nil, wineRegistry, strings.ToUpper(uuid.NewString())), 0o644); err != nil {
		return fmt.Errorf("boot Wine prefix %s: %w", dir, err)
	}
	if err := runWine(ctx, dir, "wine", "regedit", "/S", `C:\simnode.reg`); err != nil {
		return fmt.Errorf("boot Wine prefix %s: %w", dir, err)
	}
	// The registry is written when the server exits.
	if err := runWine(ctx, dir, "wineserver", "-w"); err != nil {
		return fmt.Errorf("boot Wine prefix %s: %w", dir, err)
	}
	if err := os.Remove(reg); err != nil {
		return fmt.Errorf("boot Wine prefix %s: %w", dir, err)
	}
	for _, name := range []string{"bcryptprimitives", "pdh"} {
		if err := buildWineDLL(ctx, name, filepath.Join(dir, "drive_c", "windows", "system32", name+".dll")); err != nil {
			return fmt.Errorf("boot Wine prefix %s: %w", dir, err)
		}
	}
	if err := os.Remove(filepath.Join(dir, "dosdevices", "z:")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("boot Wine prefix %s: remove drive Z: %w", dir, err)
	}
	return unlinkHome(filepath.Join(dir, "drive_c", "users"))
}

// buildWineDLL compiles winedll/name.c into out.
func buildWineDLL(ctx context.Context, name, out string) error {
	src, err := os.MkdirTemp("", "simnode-winedll-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(src)
	var files []string
	for _, file := range []string{name + ".c", name + ".def"} {
		raw, err := wineDLL.ReadFile("winedll/" + file)
		if err != nil {
			return err
		}
		p := filepath.Join(src, file)
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			return err
		}
		files = append(files, p)
	}
	args := append([]string{"-O2", "-s", "-shared", "-o", out}, files...)
	cmd := exec.CommandContext(ctx, "x86_64-w64-mingw32-gcc", append(args, "-ladvapi32")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s.dll: %w: %s", name, err, bytes.TrimSpace(b))
	}
	return nil
}

// unlinkHome replaces the symbolic links below users (Wine links
// Documents, Desktop and the like to the host's home) with empty folders.
func unlinkHome(users string) error {
	return filepath.WalkDir(users, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("unlink %s: %w", p, err)
		}
		return os.Mkdir(p, 0o755)
	})
}

// copyWinePrefix copies the prefix src to dst. Wine's own files
// (drive_c\windows, which no test writes to and which is most of the 700
// MB) are hard-linked when the file system allows it; everything else,
// the registry included, is copied.
func copyWinePrefix(src, dst string) error {
	shared := filepath.Join(src, "drive_c", "windows")
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case !d.Type().IsRegular():
			return nil
		case strings.HasPrefix(p, shared+string(filepath.Separator)):
			if os.Link(p, target) == nil {
				return nil
			}
		}
		return copyFile(p, target, info.Mode().Perm())
	})
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Node is the Wine side of a node in the Wine mode.
type Node struct {
	prefix string

	mu     sync.Mutex
	server *exec.Cmd
	done   chan struct{}
}

// Prepare makes the state directory's prefix (a copy of the
// template, or a new boot), links the simulated C: drive to its drive_c,
// and writes a state without simulated services, so that simnode seeds no
// file of its own into the prefix. StartServer starts the wineserver.
func Prepare(ctx context.Context, stateDir, hostname string, opts *Wine) (*Node, error) {
	if missing := WineMissing(); len(missing) > 0 {
		return nil, fmt.Errorf("the Wine mode needs %s: install with apt-get install %s (or make test-deps)",
			strings.Join(missing, ", "), strings.Join(missing, " "))
	}
	dir, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}
	prefix := filepath.Join(dir, "wine")
	if _, err := os.Stat(prefix); errors.Is(err, fs.ErrNotExist) {
		// What an interrupted copy or boot left.
		if err := os.RemoveAll(prefix + ".tmp"); err != nil {
			return nil, fmt.Errorf("Wine prefix: %w", err)
		}
		if opts.Template != "" {
			if err := copyWinePrefix(opts.Template, prefix+".tmp"); err != nil {
				return nil, fmt.Errorf("copy Wine prefix %s: %w", opts.Template, err)
			}
		} else if err := BootWinePrefix(ctx, prefix+".tmp"); err != nil {
			return nil, err
		}
		if err := os.Rename(prefix+".tmp", prefix); err != nil {
			return nil, fmt.Errorf("Wine prefix: %w", err)
		}
	}
	drive := filepath.Join(dir, "fs", "C")
	fi, err := os.Lstat(drive)
	if err == nil && fi.Mode()&fs.ModeSymlink == 0 {
		return nil, fmt.Errorf("the state directory %s holds a simulated C: drive (it was made without the Wine mode): use another one, or reset it", dir)
	}
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(drive), 0o755); err != nil {
			return nil, fmt.Errorf("Wine prefix: %w", err)
		}
		if err := os.Symlink(filepath.Join("..", "wine", "drive_c"), drive); err != nil {
			return nil, fmt.Errorf("Wine prefix: %w", err)
		}
	}
	// Services are Wine's own: the state has none (a bare VM).
	if err := machine.SeedBare(dir, hostname); err != nil {
		return nil, err
	}
	return &Node{prefix: prefix}, nil
}

// StartServer starts the prefix's persistent wineserver: services and the
// processes they start live between ops, as on a node.
func (w *Node) StartServer() error {
	cmd := wineCommand(context.Background(), w.prefix, "wineserver", "-f", "-p")
	cmd.Dir = ""
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start wineserver: %w", err)
	}
	w.server = cmd
	w.done = make(chan struct{})
	go func() { _ = cmd.Wait(); close(w.done) }()
	return nil
}

// Close ends every Wine process of the prefix and its wineserver.
func (w *Node) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.server == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = runWine(ctx, w.prefix, "wineserver", "-k")
	select {
	case <-w.done:
	case <-ctx.Done():
		_ = w.server.Process.Kill()
		<-w.done
	}
	w.server = nil
}

// RunAgent runs the uploaded agent at path (a C: path) under Wine with
// stdin, streaming its output, and returns its exit status. When ctx
// ends (the session closed), the agent is killed, as sshd ends a
// session's processes.
func (w *Node) RunAgent(ctx context.Context, path, op string, stdin []byte, stdout, stderr io.Writer) int {
	cmd := wineCommand(ctx, w.prefix, "wine", path, "op", op)
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	default:
		fmt.Fprintf(stderr, "simnode: run %s under Wine: %v\r\n", path, err)
		return 1
	}
}
