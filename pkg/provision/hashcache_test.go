package provision

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
)

func TestFileHashCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nodes", "winworker.json")
	sha := strings.Repeat("c", 64)
	c := OpenFileHashCache(path)
	if c.Known(`C:\k\kubelet.exe`) != nil {
		t.Fatal("a new cache knows something")
	}
	c.Remember(`C:\k\kubelet.exe`, ops.FileInfo{Exists: true, Size: 7, SHA256: sha, ModTicks: 42})
	c.Remember(`C:\k\missing.exe`, ops.FileInfo{})                                 // nothing there: not recorded
	c.Remember(`C:\k\odd.exe`, ops.FileInfo{Exists: true, SHA256: "not-a-digest"}) // not recorded
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	again := OpenFileHashCache(path)
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
	if OpenFileHashCache(path).Known(`C:\k\kubelet.exe`) != nil {
		t.Fatal("a corrupt cache file was trusted")
	}
}

type mapHashes struct {
	mu sync.Mutex
	m  map[string]ops.FileInfo
}

func (h *mapHashes) Known(dest string) *ops.FileInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f, ok := h.m[dest]; ok {
		return &f
	}
	return nil
}

func (h *mapHashes) Remember(dest string, f ops.FileInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m[dest] = f
}

// recordingNode remembers the Known records it was sent.
type recordingNode struct {
	*fakeNode
	known []*ops.FileInfo
}

func (r *recordingNode) InspectProvision(ctx context.Context, targets []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error) {
	for _, t := range targets {
		r.known = append(r.known, t.Known)
	}
	return r.fakeNode.InspectProvision(ctx, targets)
}

func (r *recordingNode) InspectLocked(ctx context.Context, lock ops.NodeLockRequest, targets []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error) {
	for _, t := range targets {
		r.known = append(r.known, t.Known)
	}
	return r.fakeNode.InspectLocked(ctx, lock, targets)
}

func TestRunRemembersWhatItSwapped(t *testing.T) {
	hashes := &mapHashes{m: map[string]ops.FileInfo{}}
	node := &recordingNode{fakeNode: &fakeNode{files: map[string]string{}, services: seedServices(nil)}}
	its := items(t)
	if _, err := Run(context.Background(), node, its, Options{Hashes: hashes}); err != nil {
		t.Fatal(err)
	}
	for _, it := range its {
		if f, ok := hashes.m[it.Destination]; !ok || f.SHA256 != "staged-ok" {
			t.Errorf("%s: record after the swap = %+v", it.Name, f)
		}
	}
	node.known = nil
	if _, err := Run(context.Background(), node, its, Options{Hashes: hashes}); err != nil {
		t.Fatal(err)
	}
	for i, k := range node.known {
		if k == nil || k.SHA256 != "staged-ok" {
			t.Errorf("target %d sent without its record: %+v", i, k)
		}
	}
}
