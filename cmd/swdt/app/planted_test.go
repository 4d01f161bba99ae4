package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// A non-administrator who made C:\k before swdt came (Windows lets any
// user create folders below C:\) and put a file there: swdt kubernetes
// refuses, naming the folder, its owner and the fix, and puts nothing
// there; swdt status says so too. Once an administrator has deleted it,
// the same run puts the binary in a folder mallory cannot write.
func TestPlantedProgramFolder(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Bare = true }), simnode.WithAccount(simnode.Account{Name: "mallory"}))
	mallory, err := ts.NodeAs("mallory")
	if err != nil {
		t.Fatal(err)
	}
	if err := mallory.MkdirAll(`C:\k`); err != nil {
		t.Fatal(err)
	}
	if err := mallory.WriteFile(`C:\k\tool.exe.swdt-bak`, []byte("MZ mallory's")); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tool.exe"), []byte("MZ tool"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := writeNodeFile(t, dir, nodeHeader("sim", ts.Credentials())+`  kubernetes:
    provisioners:
    - name: tool
      service: None
      sourceURL: ./tool.exe
      destination: C:\k\tool.exe
`)
	code, _, errOut := run(t, "kubernetes", "--no-color", "-c", file)
	if code == exitcode.OK || !strings.Contains(errOut, `C:\k is owned by mallory`) || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("kubernetes into mallory's C:\\k: exit %d\n%s", code, errOut)
	}
	n := ts.Node()
	if n.Exists(`C:\k\tool.exe`) {
		t.Error("the binary was put in mallory's folder")
	}
	if code, _, errOut := run(t, "status", "--no-color", "-c", file); !strings.Contains(errOut, `C:\k is owned by mallory`) {
		t.Errorf("status (exit %d) does not say whose C:\\k is:\n%s", code, errOut)
	}
	// An administrator deletes it, as the message says; then the run goes
	// through, into a folder mallory cannot write.
	if err := n.RemoveAll(`C:\k`); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "kubernetes", "--no-color", "-c", file); code != exitcode.OK {
		t.Fatalf("kubernetes after C:\\k was deleted: exit %d\n%s", code, errOut)
	}
	if err := mallory.WriteFile(`C:\k\tool.exe`, []byte("MZ mallory's")); err == nil {
		t.Error("mallory replaced the binary")
	}
	if err := mallory.WriteFile(`C:\k\other.exe`, []byte("MZ mallory's")); err == nil {
		t.Error("mallory put a program beside it")
	}
}
