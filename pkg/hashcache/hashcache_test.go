package hashcache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
)

func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nodes", "winworker.json")
	sha := strings.Repeat("c", 64)
	c := Open(path)
	if c.Known(`C:\k\kubelet.exe`) != nil {
		t.Fatal("a new cache knows something")
	}
	c.Remember(`C:\k\kubelet.exe`, ops.FileInfo{Exists: true, Size: 7, SHA256: sha, ModTicks: 42})
	c.Remember(`C:\k\missing.exe`, ops.FileInfo{})                                 // nothing there: not recorded
	c.Remember(`C:\k\odd.exe`, ops.FileInfo{Exists: true, SHA256: "not-a-digest"}) // not recorded
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	again := Open(path)
	got := again.Known(`c:\K\KUBELET.EXE`) // Windows paths are case-insensitive
	if got == nil || got.SHA256 != sha || got.Size != 7 || got.ModTicks != 42 {
		t.Fatalf("reloaded record = %+v", got)
	}
	if again.Known(`C:\k\missing.exe`) != nil || again.Known(`C:\k\odd.exe`) != nil {
		t.Fatal("recorded a file that is not there or has no digest")
	}
	if err := os.WriteFile(path, []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if Open(path).Known(`C:\k\kubelet.exe`) != nil {
		t.Fatal("a corrupt cache file was trusted")
	}
}
