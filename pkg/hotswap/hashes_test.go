package hotswap

import (
	"context"
	"sync"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
)

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
