package hashcache

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

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

func TestFileRTT(t *testing.T) {
	sha := strings.Repeat("d", 64)
	tests := []struct {
		name    string
		content string // the file as found ("": none)
		record  time.Duration
		wantRTT time.Duration
		wantOK  bool
	}{
		{name: "no file, nothing recorded"},
		{name: "recorded and read back", record: 21 * time.Millisecond, wantRTT: 21 * time.Millisecond, wantOK: true},
		{name: "a file written before the round trip was kept",
			content: `{"c:\\k\\kubelet.exe":{"path":"C:\\k\\kubelet.exe","exists":true,"size":7,"sha256":"` + sha + `"}}`},
		{name: "the new format", content: `{"files":{"c:\\k\\kubelet.exe":{"path":"C:\\k\\kubelet.exe","exists":true,"size":7,"sha256":"` + sha + `"}},"rttMicros":1500}`,
			wantRTT: 1500 * time.Microsecond, wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "node.json")
			if tc.content != "" {
				if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c := Open(path)
			if tc.content != "" && c.Known(`C:\k\kubelet.exe`) == nil {
				t.Fatal("the entries were not read")
			}
			c.RememberRTT(tc.record)
			if err := c.Save(); err != nil {
				t.Fatal(err)
			}
			again := Open(path)
			if rtt, ok := again.RTT(); rtt != tc.wantRTT || ok != tc.wantOK {
				t.Errorf("RTT() = %s, %v; want %s, %v", rtt, ok, tc.wantRTT, tc.wantOK)
			}
			if tc.content != "" && again.Known(`C:\k\kubelet.exe`) == nil {
				t.Error("the entries were lost")
			}
		})
	}
}

// TestRememberInspect: the services and destination paths of an inspect
// survive the process (not its lock, journal or digests); an unchanged
// inspect does not rewrite the file.
func TestRememberInspect(t *testing.T) {
	p := filepath.Join(t.TempDir(), "node.json")
	c := Open(p)
	if c.LastInspect() != nil {
		t.Fatal("a new cache knows an inspect")
	}
	found := ops.ProvisionInspectResponse{
		Files:    []ops.FileInfo{{Path: `C:\k\kubelet.exe`, Exists: true, Size: 3, SHA256: strings.Repeat("a", 64)}},
		Services: []ops.ServiceInfo{{Name: "kubelet", Exists: true, Status: "Running", PID: 42, DependsOn: []string{}, Dependents: []string{"kube-proxy"}}},
		Lock:     &ops.LockHolder{Owner: ops.LockOwner{RunID: "x"}},
	}
	c.RememberInspect(found)
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	got := Open(p).LastInspect()
	want := &ops.ProvisionInspectResponse{Files: []ops.FileInfo{{Path: `C:\k\kubelet.exe`}}, Services: found.Services}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LastInspect = %+v, want %+v", got, want)
	}
	c2 := Open(p)
	c2.RememberInspect(found)
	if c2.dirty {
		t.Error("the same inspect marked the cache changed")
	}
}
