package simnode_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/internal/syncbuf"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// A non-administrator may write where Windows Server's default DACLs let
// BUILTIN\Users write, and nowhere else, over SFTP and through the
// Windows layer its programs run on; what it creates is its own.
func TestNonAdminObeysDefaultACLs(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
	admin := ts.Node()
	for _, dir := range []string{`C:\k`, `C:\Program Files\swdt`} {
		if err := admin.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := admin.WriteFile(`C:\ProgramData\admins.txt`, []byte("admin")); err != nil {
		t.Fatal(err)
	}
	sc := ts.SFTP("mallory")
	w, err := ts.NodeAs("mallory")
	if err != nil {
		t.Fatal(err)
	}
	osw := w.OS()
	tests := []struct {
		name string
		do   func() error
		ok   bool
	}{
		{"file in C:\\ProgramData", func() error { return put(sc, "/C:/ProgramData/planted.exe") }, true},
		{"folder in C:\\ProgramData", func() error { return sc.Mkdir("/C:/ProgramData/swdt") }, true},
		{"file in a planted folder", func() error { return put(sc, "/C:/ProgramData/swdt/swap.lock") }, true},
		{"folder in C:\\", func() error { return sc.Mkdir("/C:/planted") }, true},
		{"file in C:\\", func() error { return put(sc, "/C:/planted.txt") }, false},
		{"file in an administrator's folder below C:\\", func() error { return put(sc, "/C:/k/kubelet.exe.swdt-new") }, true},
		{"overwrite an administrator's executable", func() error { return put(sc, "/C:/k/kubelet.exe") }, false},
		{"delete an administrator's executable", func() error { return sc.Remove("/C:/k/kubelet.exe") }, false},
		{"rename an administrator's executable", func() error { return sc.Rename("/C:/k/kubelet.exe", "/C:/k/old.exe") }, false},
		{"delete an administrator's file in C:\\ProgramData", func() error { return sc.Remove("/C:/ProgramData/admins.txt") }, false},
		{"rewrite its own file", func() error { return put(sc, "/C:/ProgramData/planted.exe") }, true},
		{"file in C:\\Program Files", func() error { return put(sc, "/C:/Program Files/planted.exe") }, false},
		{"folder in C:\\Program Files", func() error { return sc.Mkdir("/C:/Program Files/planted") }, false},
		{"file in C:\\Program Files\\swdt", func() error { return put(sc, "/C:/Program Files/swdt/swap.lock") }, false},
		{"file in C:\\Windows", func() error { return put(sc, "/C:/Windows/System32/planted.dll") }, false},
		{"file in its profile", func() error { return put(sc, "/C:/Users/mallory/notes.txt") }, true},
		{"file in the administrator's profile", func() error { return put(sc, "/C:/Users/Administrator/notes.txt") }, false},
		{"read an administrator's executable", func() error { _, err := sc.Stat("/C:/k/kubelet.exe"); return err }, true},
		{"its program writes C:\\Windows", func() error { return osw.WriteFile(`C:\Windows\System32\x.dll`, []byte("x")) }, false},
		{"its program writes C:\\ProgramData", func() error { return osw.WriteFile(`C:\ProgramData\y.txt`, []byte("y")) }, true},
		{"its program takes an administrator's file", func() error { return osw.SetOwner(`C:\k\kubelet.exe`, "mallory") }, false},
		{"its program opens up C:\\Program Files\\swdt", func() error {
			return osw.SetACL(`C:\Program Files\swdt`, winos.ACL{Entries: []winos.ACE{{SID: winos.SIDUsers, Mask: winos.FileAllAccess}}})
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if tt.ok && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tt.ok && err == nil {
				t.Error("allowed, want access denied")
			}
		})
	}
	for _, p := range []string{`C:\ProgramData\planted.exe`, `C:\ProgramData\swdt`, `C:\k\kubelet.exe.swdt-new`} {
		if owner, err := admin.Owner(p); err != nil || owner != "mallory" {
			t.Errorf("owner of %s = %q, %v; want mallory", p, owner, err)
		}
	}
	if owner, err := admin.Owner(`C:\k\kubelet.exe`); err != nil || owner != simnode.AccountAdministrators {
		t.Errorf("owner of C:\\k\\kubelet.exe = %q, %v; want %s", owner, err, simnode.AccountAdministrators)
	}
}

func put(sc *sftp.Client, p string) error {
	f, err := sc.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte("planted")); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// The agent's ACL and owner calls act on the model: a folder it protects
// keeps its DACL and owner across reads, and what is created below it
// inherits Administrators' and SYSTEM's entries only.
func TestProtectedFolderIsInherited(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
	osw := ts.Node().OS()
	dir := `C:\ProgramData\guarded`
	if err := osw.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	acl := winos.ACL{Protected: true, Entries: []winos.ACE{
		{SID: winos.SIDAdministrators, Mask: winos.FileAllAccess, Inherit: true},
		{SID: winos.SIDSystem, Mask: winos.FileAllAccess, Inherit: true},
	}}
	if err := osw.SetACL(dir, acl); err != nil {
		t.Fatal(err)
	}
	if err := osw.WriteFile(dir+`\journal.json`, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	got, err := osw.ACL(dir + `\journal.json`)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range got.Entries {
		if e.SID != winos.SIDAdministrators && e.SID != winos.SIDSystem {
			t.Errorf("journal.json grants %s mask %#x", e.SID, e.Mask)
		}
	}
	if owner, err := osw.Owner(dir); err != nil || owner != winos.SIDAdministrators {
		t.Errorf("owner = %q, %v", owner, err)
	}
	sc := ts.SFTP("mallory")
	if err := put(sc, "/C:/ProgramData/guarded/planted"); err == nil {
		t.Error("mallory wrote into a protected folder")
	}
	if _, err := sc.Stat("/C:/ProgramData/guarded/journal.json"); err != nil {
		t.Errorf("stat: %v", err)
	}
	if _, err := sc.Open("/C:/ProgramData/guarded/journal.json"); err == nil {
		t.Error("mallory read a file only Administrators and SYSTEM may read")
	}
}

// A file at the agent's path runs as swdt-agent only when its bytes are
// the embedded agent's; any other program "runs", fails, and is logged:
// also when it was written behind simnode's back with the agent's size
// and last-write time.
func TestUntrustedProgramAtAgentPath(t *testing.T) {
	tests := []struct {
		name    string
		replace func(t *testing.T, ts *simnode.TestServer, stateDir, path string)
	}{
		{name: "other bytes through the node", replace: func(t *testing.T, ts *simnode.TestServer, _, path string) {
			if err := ts.Node().WriteFile(path, []byte("MZ something else")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "same size and time on the host", replace: func(t *testing.T, ts *simnode.TestServer, stateDir, path string) {
			real, err := ts.Node().RealPath(path)
			if err != nil {
				t.Fatal(err)
			}
			host := filepath.Join(stateDir, "fs", "C", filepath.FromSlash(strings.TrimPrefix(real, "/C:/")))
			fi, err := os.Stat(host)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(host, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt([]byte("MZ something else"), 0); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(host, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logged syncbuf.Buffer
			stateDir := filepath.Join(t.TempDir(), "simnode")
			ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) {
				o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
				o.StateDir = stateDir
			}))
			path := ts.InstallAgent()
			ex := ts.Execer()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var out, errOut bytes.Buffer
			if status, err := ex.Exec(ctx, ops.CommandLine(path, ops.NodeFacts.Name), strings.NewReader("{}"), &out, &errOut); err != nil || status != 0 {
				t.Fatalf("the embedded agent: status %d, err %v, stderr %s", status, err, errOut.String())
			}
			tt.replace(t, ts, stateDir, path)
			errOut.Reset()
			status, err := ex.Exec(ctx, ops.CommandLine(path, ops.NodeFacts.Name), strings.NewReader("{}"), &out, &errOut)
			if err != nil || status == 0 {
				t.Errorf("other bytes: status %d, err %v, want a failure", status, err)
			}
			if got := ts.UntrustedRuns(); len(got) != 1 || got[0] != path {
				t.Errorf("UntrustedRuns = %v, want [%s]", got, path)
			}
			if !strings.Contains(logged.String(), strconv.Quote("ran untrusted program "+path)) {
				t.Errorf("log does not say it ran an untrusted program:\n%s", logged.String())
			}
		})
	}
}

// --non-admin NAME=PUBKEYFILE adds an account that logs in with that key
// only, as itself.
func TestNonAdminAccountKey(t *testing.T) {
	dir := t.TempDir()
	ts := simnode.StartTest(t)
	pub, err := os.ReadFile(ts.PublicKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "mallory.pub")
	if err := os.WriteFile(file, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := simnode.ParseNonAdmin("mallory=" + file)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "mallory" || a.Admin || len(a.Keys) != 1 {
		t.Fatalf("account %+v", a)
	}
	other := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) {
		o.AuthorizedKeys = nil
		o.Accounts = append(o.Accounts, simnode.Account{Name: "mallory", Keys: a.Keys})
	}))
	if c, err := dialWith(other, "mallory", ts.Signer); err != nil {
		t.Errorf("mallory with its key: %v", err)
	} else {
		c.Close()
	}
	if c, err := dialWith(other, "Administrator", ts.Signer); err == nil {
		c.Close()
		t.Error("mallory's key logged in as Administrator")
	}
	for _, bad := range []string{"mallory", "=x.pub", "mal lory=" + file, "mallory=" + filepath.Join(dir, "missing.pub")} {
		if _, err := simnode.ParseNonAdmin(bad); err == nil {
			t.Errorf("ParseNonAdmin(%q) accepted", bad)
		} else if errors.Is(err, fs.ErrNotExist) && !strings.Contains(err.Error(), "--non-admin") {
			t.Errorf("ParseNonAdmin(%q): %v does not name the flag", bad, err)
		}
	}
}

func dialWith(ts *simnode.TestServer, user string, signer ssh.Signer) (*ssh.Client, error) {
	return ssh.Dial("tcp", ts.Addr(), &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: ssh.FixedHostKey(ts.HostKey()),
		Timeout:         10 * time.Second,
	})
}

// A fresh Windows Server's system folders belong to TrustedInstaller,
// which has full control of them, beside Administrators' and SYSTEM's;
// a folder created below them belongs to Administrators, and an
// administrator may take one and give it back.
func TestSystemFoldersBelongToTrustedInstaller(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Bare = true }))
	w := ts.Node().OS()
	if err := ts.Node().MkdirAll(`C:\Program Files\containerd`); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, owner string
		tiFull      bool
	}{
		{`C:\Windows`, winos.SIDTrustedInstaller, true},
		{`C:\Program Files`, winos.SIDTrustedInstaller, true},
		{`C:\Program Files (x86)`, winos.SIDTrustedInstaller, true},
		{`C:\Program Files\containerd`, winos.SIDAdministrators, false},
		{`C:\ProgramData`, winos.SIDAdministrators, false},
	}
	for _, tt := range tests {
		owner, err := w.Owner(tt.path)
		if err != nil || owner != tt.owner {
			t.Errorf("owner of %s = %q, %v; want %s", tt.path, owner, err, tt.owner)
		}
		acl, err := w.ACL(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		full := false
		for _, e := range acl.Entries {
			full = full || e.SID == winos.SIDTrustedInstaller && e.Mask == winos.FileAllAccess && !e.Inherit
		}
		if full != tt.tiFull {
			t.Errorf("ACL of %s: TrustedInstaller's full control %v, want %v (%+v)", tt.path, full, tt.tiFull, acl.Entries)
		}
	}
	for _, sid := range []string{winos.SIDAdministrators, winos.SIDTrustedInstaller} {
		if err := w.SetOwner(`C:\Program Files`, sid); err != nil {
			t.Fatal(err)
		}
		if owner, _ := w.Owner(`C:\Program Files`); owner != sid {
			t.Errorf("after SetOwner(%s), the owner is %s", sid, owner)
		}
	}
}
