package winos

// These tests call the real system and run only on Windows.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// onWine reports whether the tests run under Wine (its ntdll exports
// wine_get_version), which CI runs them on. Where Wine lacks an API the
// layer degrades as documented, and the tests check that instead.
func onWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// tempDir is t.TempDir removed file by file: os.RemoveAll deletes through
// FILE_DISPOSITION_POSIX_SEMANTICS, which Wine refuses ("Invalid
// function"), while the layer itself deletes with DeleteFile.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "winos-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var paths []string
		filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
			paths = append(paths, p)
			return err
		})
		for _, p := range slices.Backward(paths) {
			os.Remove(p)
		}
	})
	return dir
}

// The machine's architecture is one swdt builds for; this test binary
// runs natively under Wine and on an x64 or ARM64 Windows built for it.
func TestWindowsArch(t *testing.T) {
	arch, err := New().Arch()
	if err != nil || (arch != "amd64" && arch != "arm64") || (onWine() && arch != runtime.GOARCH) {
		t.Errorf("Arch() = %q, %v; this test is %s", arch, err, runtime.GOARCH)
	}
}

func TestWindowsHostnameAndUser(t *testing.T) {
	w := New()
	if name, err := w.Hostname(); err != nil || name == "" {
		t.Errorf("Hostname() = %q, %v", name, err)
	}
	u, err := w.CurrentUser()
	if err != nil || !strings.Contains(u.Name, `\`) {
		t.Errorf("CurrentUser() = %+v, %v; want DOMAIN\\user", u, err)
	}
}

func TestWindowsFiles(t *testing.T) {
	w := New()
	dir := filepath.Join(tempDir(t), "a", "b")
	if err := w.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	for _, p := range []string{a, b} {
		if err := w.WriteFile(p, []byte("data")); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := w.Stat(a); err != nil || fi.Size != 4 || fi.IsDir {
		t.Errorf("Stat(a) = %+v, %v", fi, err)
	}
	f, err := w.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	// A file open for reading can be renamed (Open shares delete access).
	moved := filepath.Join(dir, "moved.txt")
	if err := w.Rename(a, moved); err != nil {
		t.Errorf("Rename of a file open for reading = %v", err)
	} else if err := w.Rename(moved, a); err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(data) != "data" {
		t.Errorf("read %q, %v", data, err)
	}
	if err := w.Rename(a, b); Code(err) != ErrAlreadyExists || !errors.Is(err, fs.ErrExist) {
		t.Errorf("Rename onto an existing file = %v, want ERROR_ALREADY_EXISTS", err)
	}
	if err := w.Remove(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	_, err = w.Stat(a)
	var we *Error
	if !errors.Is(err, fs.ErrNotExist) || !errors.As(err, &we) || we.Message == "" {
		t.Errorf("Stat of a moved file = %v, want *Error wrapping fs.ErrNotExist", err)
	}
}

func TestWindowsFileVersion(t *testing.T) {
	w := New()
	sys, err := windows.GetSystemDirectory()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := w.FileVersion(filepath.Join(sys, "kernel32.dll")); err != nil || v == "" {
		t.Errorf("FileVersion(kernel32.dll) = %q, %v", v, err)
	}
	text := filepath.Join(tempDir(t), "x.txt")
	if err := os.WriteFile(text, []byte("no resources"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, err := w.FileVersion(text); err != nil || v != "" {
		t.Errorf("FileVersion(text file) = %q, %v; want no version", v, err)
	}
	if _, err := w.FileVersion(text + ".missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("FileVersion(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestWindowsACLRoundTrip(t *testing.T) {
	if onWine() {
		t.Skip("Wine keeps no DACL on files: the agent checks for that (footprintKept) and says so")
	}
	w := New()
	p := filepath.Join(tempDir(t), "authorized_keys")
	if err := w.WriteFile(p, nil); err != nil {
		t.Fatal(err)
	}
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		t.Fatal(err)
	}
	me := tu.User.Sid.String()
	want := ACL{Protected: true, Entries: []ACE{
		{SID: SIDAdministrators, Mask: FileAllAccess},
		{SID: SIDSystem, Mask: FileAllAccess},
		{SID: me, Mask: FileAllAccess},
	}}
	if err := w.SetACL(p, want); err != nil {
		t.Fatal(err)
	}
	got, err := w.ACL(p)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Protected || len(got.Entries) != len(want.Entries) {
		t.Fatalf("ACL = %+v, want %+v", got, want)
	}
	for _, e := range want.Entries {
		if !slices.Contains(got.Entries, e) {
			t.Errorf("ACL %+v lacks %+v", got, e)
		}
	}
	if err := w.SetACL(p, ACL{Entries: []ACE{{SID: "not-a-sid", Mask: FileAllAccess}}}); Code(err) == 0 {
		t.Errorf("SetACL with a bad SID = %v, want a Win32 error", err)
	}
}

func TestWindowsProcessesIncludeSelf(t *testing.T) {
	procs, err := New().Processes()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.PID == os.Getpid() {
			// Wine has no ProcessCommandLineInformation: the command line
			// is then "", as for a process that refuses the query.
			if !strings.EqualFold(p.Path, exe) || !strings.EqualFold(p.Name, filepath.Base(exe)) || (p.CommandLine == "" && !onWine()) {
				t.Errorf("self = %+v, want path %s and a command line", p, exe)
			}
			return
		}
	}
	t.Errorf("PID %d not among %d processes", os.Getpid(), len(procs))
}

// TestWindowsHelperProcess is the program TestWindowsRun runs: the test
// binary itself, given "helper EXIT-CODE ARGS..." after "--" (or "flood").
// It prints its arguments joined by "|", then its stdin, writes to stderr
// and exits with EXIT-CODE.
func TestWindowsHelperProcess(t *testing.T) {
	args := flag.Args()
	switch {
	case len(args) == 1 && args[0] == "block":
		io.Copy(io.Discard, os.Stdin) // until its stdin closes, or it is killed
		os.Exit(0)
	case len(args) == 1 && args[0] == "flood":
		os.Stdout.Write(bytes.Repeat([]byte("x"), maxOutput+1000))
		os.Exit(0)
	case len(args) >= 2 && args[0] == "helper":
		code, _ := strconv.Atoi(args[1])
		fmt.Println(strings.Join(args[2:], "|"))
		io.Copy(os.Stdout, os.Stdin)
		fmt.Fprint(os.Stderr, "to stderr")
		os.Exit(code)
	}
}

func helper(t *testing.T, args ...string) Command {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Command{Path: exe, Args: append([]string{"-test.run=^TestWindowsHelperProcess$", "--"}, args...)}
}

func TestWindowsRun(t *testing.T) {
	w := New()
	ctx := context.Background()
	odd := []string{"two words", `quote " inside`, `trailing\`, "", `C:\dir with space\`}
	cmd := helper(t, append([]string{"helper", "3"}, odd...)...)
	cmd.Stdin = []byte("from stdin")
	res, err := w.Run(ctx, cmd)
	if err != nil || res.ExitCode != 3 || string(res.Stderr) != "to stderr" ||
		string(res.Stdout) != strings.Join(odd, "|")+"\n"+"from stdin" {
		t.Errorf("Run(helper) = {%d %q %q}, %v; want exit code 3, the arguments unchanged, stdin echoed", res.ExitCode, res.Stdout, res.Stderr, err)
	}
	res, err = w.Run(ctx, helper(t, "flood"))
	if err != nil || len(res.Stdout) != maxOutput {
		t.Errorf("Run(flood) kept %d bytes, %v; want %d", len(res.Stdout), err, maxOutput)
	}
	// A bare name is found in System32.
	res, err = w.Run(ctx, Command{Path: "cmd.exe", Args: []string{"/d", "/c", "exit 4"}})
	if err != nil || res.ExitCode != 4 {
		t.Errorf("Run(cmd.exe) = %+v, %v; want exit code 4", res, err)
	}
	if _, err := w.Run(ctx, Command{Path: "swdt-no-such-program.exe"}); err == nil {
		t.Error("Run of a missing program succeeded")
	}
	// A missing bare name without an extension fails in os/exec's own
	// lookup, which carries no Win32 code: it is still a missing file.
	for _, search := range []bool{false, true} {
		if _, err := w.Run(ctx, Command{Path: "swdt-no-such-program", SearchPath: search}); Code(err) != ErrFileNotFound {
			t.Errorf("Run of a missing bare name (search %v) = %v, want ERROR_FILE_NOT_FOUND", search, err)
		}
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = w.Run(short, Command{Path: "ping.exe", Args: []string{"-n", "30", "127.0.0.1"}})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Errorf("Run past its deadline = %v after %v, want the context's error at once", err, time.Since(start))
	}
}

func TestWindowsScripts(t *testing.T) {
	if onWine() {
		t.Skip("Wine's powershell.exe is a stub that prints nothing; the Wine tier checks what swdt says then")
	}
	w := New()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := w.RunScript(ctx, ScriptLanguageMode, nil)
	if err != nil || res.ExitCode != 0 || !strings.HasSuffix(strings.TrimSpace(string(res.Stdout)), "Language") {
		t.Errorf("language mode = %+v, %v", res, err)
	}
	rules, err := w.FirewallRules(ctx, []string{"swdt-no-such-rule"})
	if err != nil || len(rules) != 1 || rules[0].Exists {
		t.Errorf("FirewallRules(missing) = %+v, %v", rules, err)
	}
	if removed, err := w.RemoveFirewallRules(ctx, []string{"swdt-no-such-rule"}); err != nil || len(removed) != 0 {
		t.Errorf("RemoveFirewallRules(missing) = %q, %v", removed, err)
	}
	if st, err := w.WindowsFeature(ctx, "Containers"); err != nil || st == "" {
		t.Errorf("WindowsFeature(Containers) = %q, %v", st, err)
	}
}

func TestWindowsServices(t *testing.T) {
	w := New()
	if _, err := w.Service("swdt-no-such-service"); Code(err) != ErrServiceDoesNotExist {
		t.Errorf("missing service: %v, want ERROR_SERVICE_DOES_NOT_EXIST", err)
	}
	s, err := w.Service("EventLog")
	if err != nil || s.Status != StatusRunning || s.StartType != "Automatic" || s.PID == 0 || s.CommandLine == "" || s.DisplayName == "" {
		t.Errorf("Service(EventLog) = %+v, %v", s, err)
	}
	// Wine has no SERVICE_CONFIG_FAILURE_ACTIONS (error 124), which the
	// swap treats as "no failure actions to keep".
	if _, err := w.Recovery("EventLog"); err != nil && !(onWine() && Code(err) == ErrInvalidLevel) {
		t.Errorf("Recovery(EventLog): %v", err)
	}
}

func TestWindowsRegistry(t *testing.T) {
	w := New()
	const key = `SOFTWARE\Microsoft\Windows NT\CurrentVersion`
	v, err := w.RegistryValue(key, "CurrentBuild")
	if err != nil || v.Kind != RegString || v.String == "" {
		t.Errorf("CurrentBuild = %+v, %v", v, err)
	}
	if _, err := w.RegistryValue(key, "swdt-no-such-value"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing value: %v, want fs.ErrNotExist", err)
	}
	if _, err := w.RegistryValue(key+`\swdt-no-such-key`, "x"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing key: %v, want fs.ErrNotExist", err)
	}
}

func TestWindowsPipes(t *testing.T) {
	w := New()
	name := fmt.Sprintf("swdt-test-%d", os.Getpid())
	p, err := windows.UTF16PtrFromString(`\\.\pipe\` + name)
	if err != nil {
		t.Fatal(err)
	}
	h, err := windows.CreateNamedPipe(p, windows.PIPE_ACCESS_DUPLEX, windows.PIPE_TYPE_BYTE, 1, 512, 512, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	if ok, err := w.PipeExists(name); !ok || err != nil {
		t.Errorf("PipeExists(%s) = %v, %v", name, ok, err)
	}
	if ok, err := w.PipeExists(name + "-missing"); ok || err != nil {
		t.Errorf("PipeExists(missing) = %v, %v", ok, err)
	}
	pipes, err := w.Pipes()
	if onWine() {
		// Wine cannot list \\.\pipe\ (ERROR_BAD_DEV_TYPE): the agent
		// then asks for each pipe by name.
		if err == nil {
			t.Logf("Wine lists pipes now: %d", len(pipes))
		}
		return
	}
	if err != nil || !slices.Contains(pipes, name) {
		t.Errorf("Pipes() = %d pipes without %s, %v", len(pipes), name, err)
	}
}

func TestWindowsPortListening(t *testing.T) {
	w := New()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if ok, err := w.PortListening(port); !ok || err != nil {
		t.Errorf("PortListening(%d) while listening = %v, %v", port, ok, err)
	}
	l.Close()
	if ok, err := w.PortListening(port); ok || err != nil {
		t.Errorf("PortListening(%d) after close = %v, %v", port, ok, err)
	}
}

func TestWindowsACLOfSecurityDescriptor(t *testing.T) {
	everyone := []ACE{{SID: SIDEveryone, Mask: FileAllAccess}}
	tests := []struct {
		sddl      string
		want      ACL
		wantError bool
	}{
		{"D:P(A;;FA;;;BA)(D;;0x1200a9;;;WD)(A;ID;FA;;;SY)", ACL{Protected: true, Entries: []ACE{
			{SID: SIDAdministrators, Mask: FileAllAccess},
			{SID: SIDEveryone, Deny: true, Mask: 0x1200a9},
			{SID: SIDSystem, Mask: FileAllAccess},
		}}, false},
		{"D:AI(A;ID;0x1200a9;;;BU)", ACL{Entries: []ACE{{SID: SIDUsers, Mask: 0x1200a9}}}, false},
		{"D:NO_ACCESS_CONTROL", ACL{Entries: everyone}, false},
		{"O:BA", ACL{Entries: everyone}, false},
		{"D:P", ACL{Protected: true}, false},
		{"D:(OA;;CC;bf967aba-0de6-11d0-a285-00aa003049e2;;WD)", ACL{}, true},
	}
	for _, tt := range tests {
		if onWine() && (tt.sddl == "D:NO_ACCESS_CONTROL" || tt.wantError) {
			continue // Wine's SDDL parser cannot build these descriptors
		}
		sd, err := windows.SecurityDescriptorFromString(tt.sddl)
		if err != nil {
			t.Fatalf("%s: %v", tt.sddl, err)
		}
		got, err := aclOf(sd)
		if (err != nil) != tt.wantError {
			t.Errorf("%s: error = %v, want error %v", tt.sddl, err, tt.wantError)
			continue
		}
		if !tt.wantError && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: ACL = %+v, want %+v", tt.sddl, got, tt.want)
		}
	}
}

func TestWindowsDACLOfEntries(t *testing.T) {
	tests := []struct {
		entries []ACE
		want    string
	}{
		{[]ACE{{SID: SIDAdministrators, Mask: FileAllAccess}, {SID: SIDSystem, Mask: FileAllAccess}}, "D:P(A;;FA;;;BA)(A;;FA;;;SY)"},
		// Canonical order: the denial moves first.
		{[]ACE{{SID: SIDSystem, Mask: FileAllAccess}, {SID: SIDEveryone, Deny: true, Mask: 0x1200a9}}, "D:P(D;;0x1200a9;;;WD)(A;;FA;;;SY)"},
	}
	for _, tt := range tests {
		dacl, err := daclOf(tt.entries)
		if err != nil {
			t.Fatal(err)
		}
		sd, err := windows.NewSecurityDescriptor()
		if err != nil {
			t.Fatal(err)
		}
		if err := sd.SetDACL(dacl, true, false); err != nil {
			t.Fatal(err)
		}
		if err := sd.SetControl(windows.SE_DACL_PROTECTED, windows.SE_DACL_PROTECTED); err != nil {
			t.Fatal(err)
		}
		rel, err := sd.ToSelfRelative()
		if err != nil {
			t.Fatal(err)
		}
		if got := rel.String(); got != tt.want {
			t.Errorf("DACL of %+v = %s, want %s", tt.entries, got, tt.want)
		}
	}
	if _, err := daclOf([]ACE{{SID: "not-a-sid", Mask: FileAllAccess}}); Code(err) == 0 {
		t.Errorf("bad SID: %v, want a Win32 error", err)
	}
}

func TestWindowsMutex(t *testing.T) {
	w := New()
	name := fmt.Sprintf("swdt-test-%d", os.Getpid())
	unlock, abandoned, err := w.LockMutex(context.Background(), name)
	if err != nil || abandoned {
		t.Fatalf("LockMutex = %v, abandoned %v", err, abandoned)
	}
	// A mutex is its thread's, not the process's: a second owner waits,
	// whatever thread it runs on.
	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, _, err := w.LockMutex(short, name); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("second LockMutex while held = %v, want the context's deadline", err)
	}
	unlock()
	unlock2, _, err := w.LockMutex(context.Background(), name)
	if err != nil {
		t.Fatalf("LockMutex after unlock = %v", err)
	}
	unlock2()
}

func TestWindowsLongPaths(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`C:\k\kubelet.exe`, `\\?\C:\k\kubelet.exe`},
		{`C:/k/../k/kubelet.exe`, `\\?\C:\k\kubelet.exe`},
		{`\\?\C:\k\kubelet.exe`, `\\?\C:\k\kubelet.exe`},
		{`\\server\share\x`, `\\server\share\x`},
		{`k\kubelet.exe`, `k\kubelet.exe`},
	} {
		if got := longPath(tt.in); got != tt.want {
			t.Errorf("longPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// A file beyond MAX_PATH opens through the Windows layer.
	w := New()
	dir := tempDir(t)
	for len(dir) < 300 {
		dir = filepath.Join(dir, strings.Repeat("d", 40))
	}
	if err := w.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "long.txt")
	if err := w.WriteFile(p, []byte("long")); err != nil {
		t.Fatal(err)
	}
	f, err := w.Open(p)
	if err != nil {
		t.Fatalf("Open of a %d-character path = %v", len(p), err)
	}
	f.Close()
}

// KillProcess kills only the process it was asked for: one whose creation
// time differs (its PID was given to another) is left running, and one
// that has exited while a handle still holds it is gone, not a failure.
func TestWindowsKillProcess(t *testing.T) {
	w := New()
	c := helper(t, "block")
	cmd := exec.Command(c.Path, c.Args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	procs, err := w.Processes()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(procs, func(p Process) bool { return p.PID == cmd.Process.Pid })
	if i < 0 || procs[i].Started.IsZero() {
		t.Fatalf("the helper (PID %d) is not listed with its creation time", cmd.Process.Pid)
	}
	started := procs[i].Started
	if err := w.KillProcess(cmd.Process.Pid, started.Add(-time.Second)); Code(err) != ErrInvalidParameter {
		t.Errorf("KillProcess with another creation time = %v, want ERROR_INVALID_PARAMETER", err)
	}
	if err := w.KillProcess(cmd.Process.Pid, started); err != nil {
		t.Fatalf("KillProcess = %v", err)
	}
	if err := cmd.Wait(); err == nil {
		t.Error("the helper exited on its own; want it killed")
	}
	// cmd.Process still holds its handle: the process has exited, and a
	// kill now finds it gone.
	if err := w.KillProcess(cmd.Process.Pid, started); err != nil && Code(err) != ErrInvalidParameter {
		t.Errorf("KillProcess of an exited process = %v, want nil or ERROR_INVALID_PARAMETER", err)
	}
}

// The mutex the agent creates lets only SYSTEM and Administrators open
// it, and its owner is one the agent trusts.
func TestWindowsMutexSecurity(t *testing.T) {
	w := New()
	name := fmt.Sprintf("swdt-test-sd-%d", os.Getpid())
	unlock, _, err := w.LockMutex(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	p, _ := windows.UTF16PtrFromString(`Global\` + name)
	h, err := windows.OpenMutex(windows.READ_CONTROL, false, p)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(h)
	if err := trustedOwner(h, name); err != nil {
		t.Errorf("trustedOwner of the agent's own mutex = %v", err)
	}
	sd, err := windows.GetSecurityInfo(h, windows.SE_KERNEL_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatal(err)
	}
	acl, err := aclOf(sd)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range acl.Entries {
		if e.SID != SIDSystem && e.SID != SIDAdministrators {
			t.Errorf("the mutex's DACL lets %s in: %+v", e.SID, acl)
		}
	}
	if !acl.Protected && !onWine() {
		t.Errorf("the mutex's DACL is not protected: %+v", acl)
	}
}

// ConfigureService without dependencies clears those the service had
// (mgr alone would leave them: it sends an empty list as "unchanged").
func TestWindowsConfigureServiceClearsDependencies(t *testing.T) {
	if !windows.GetCurrentProcessToken().IsElevated() {
		t.Skip("creating a service needs an administrator")
	}
	w := New()
	name := fmt.Sprintf("swdt-test-deps-%d", os.Getpid())
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := ServiceConfig{Name: name, Program: exe, StartType: "Manual", DependsOn: []string{"EventLog"}}
	if err := w.CreateService(cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s, err := openService(name, windows.DELETE); err == nil {
			s.Delete()
			s.close()
		}
	})
	if svc, err := w.Service(name); err != nil || !slices.Equal(svc.Dependencies, []string{"EventLog"}) {
		t.Fatalf("dependencies of the new service = %q, %v; want EventLog", svc.Dependencies, err)
	}
	cfg.DependsOn = nil
	if err := w.ConfigureService(cfg); err != nil {
		t.Fatal(err)
	}
	// Wine's QueryServiceConfig reports no dependencies: Service reads
	// them from the registry then.
	svc, err := w.Service(name)
	if err != nil || len(svc.Dependencies) != 0 {
		t.Errorf("dependencies after ConfigureService without any = %q, %v; want none", svc.Dependencies, err)
	}
}

// Create returns a Cloner exactly where the volume is ReFS (a Dev Drive
// is one), and its CloneAppend puts the source's clusters after what was
// written; on NTFS and under Wine, whose volumes do not clone blocks, it
// returns a plain file and the agent copies.
func TestWindowsCreateClonesOnlyOnReFS(t *testing.T) {
	dir := tempDir(t)
	w := New()
	out, err := w.Create(filepath.Join(dir, "new.exe"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var name [64]uint16
	h := windows.Handle(out.(interface{ Fd() uintptr }).Fd())
	if err := windows.GetVolumeInformationByHandle(h, nil, 0, nil, nil, nil, &name[0], uint32(len(name))); err != nil {
		t.Fatal(err)
	}
	fsName := windows.UTF16ToString(name[:])
	cl, ok := out.(Cloner)
	if want := fsName == "ReFS" && !onWine(); ok != want {
		t.Fatalf("Create on %s (Wine: %v) returned a Cloner: %v, want %v", fsName, onWine(), ok, want)
	}
	if !ok {
		return
	}
	c := cl.ClusterSize()
	src := make([]byte, 3*c)
	for i := range src {
		src[i] = byte(i / 512)
	}
	if err := w.WriteFile(filepath.Join(dir, "old.exe"), src); err != nil {
		t.Fatal(err)
	}
	ref, err := w.Open(filepath.Join(dir, "old.exe"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	head := bytes.Repeat([]byte("h"), int(c))
	if _, err := cl.Write(head); err != nil {
		t.Fatal(err)
	}
	if err := cl.CloneAppend(ref, c, 2*c); err != nil {
		t.Fatalf("clone: %v", err)
	}
	if _, err := cl.Write([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "new.exe"))
	if want := append(append(head, src[c:]...), "tail"...); err != nil || !bytes.Equal(got, want) {
		t.Errorf("the file has %d bytes (%v), want %d", len(got), err, len(want))
	}
}
