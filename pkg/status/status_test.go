package status

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
)

type fakeNode struct {
	files    map[string]ops.FileInfo
	services []ops.ServiceInfo
	known    []*ops.FileInfo
	err      error
	// unfinished is the node's swap journal, if any.
	unfinished *ops.UnfinishedSwap
}

func (f *fakeNode) Facts(context.Context) (ops.NodeFactsResponse, error) {
	return ops.NodeFactsResponse{Hostname: "WIN-1", CurrentBuild: "20348", IsAdmin: true}, f.err
}

func (f *fakeNode) InspectProvision(_ context.Context, targets []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error) {
	var resp ops.ProvisionInspectResponse
	for _, t := range targets {
		f.known = append(f.known, t.Known)
		resp.Files = append(resp.Files, f.files[t.Destination])
	}
	resp.Services = f.services
	resp.Unfinished = f.unfinished
	return resp, nil
}

type mapHashes map[string]ops.FileInfo

func (m mapHashes) Known(d string) *ops.FileInfo {
	if f, ok := m[d]; ok {
		return &f
	}
	return nil
}
func (m mapHashes) Remember(d string, f ops.FileInfo) { m[d] = f }

func TestGather(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	node := &fakeNode{
		files: map[string]ops.FileInfo{
			`C:\k\kubelet.exe`:    {Exists: true, Size: 10, SHA256: a},
			`C:\k\kube-proxy.exe`: {Exists: true, Size: 11, SHA256: a},
			`C:\k\wins.exe`:       {},
		},
		services: []ops.ServiceInfo{
			{Name: "kubelet", Exists: true, Status: "Running", StartType: "Automatic", PID: 42},
			{Name: "kube-proxy", Exists: true, Status: "Stopped", StartType: "Manual", Via: "nssm + PowerShell"},
			{Name: "containerd", Exists: true, Status: "Running", Via: "nssm"},
		},
	}
	targets := []Target{
		{Name: "kubelet", Service: "kubelet", Destination: `C:\k\kubelet.exe`, WantSHA256: a},
		{Name: "kube-proxy", Service: "kube-proxy", Destination: `C:\k\kube-proxy.exe`, WantSHA256: b},
		{Name: "containerd", Service: "containerd", Destination: `C:\k\containerd.exe`, NoWant: NoLocalBuild},
		{Name: "wins", Service: "rancher-wins", Destination: `C:\k\wins.exe`, WantSHA256: a},
	}
	hashes := mapHashes{`C:\k\kubelet.exe`: {Exists: true, Size: 10, SHA256: a}}
	r, err := Gather(context.Background(), node, targets, hashes)
	if err != nil {
		t.Fatal(err)
	}
	want := []Binary{
		{Name: "kubelet", Service: "kubelet", Destination: `C:\k\kubelet.exe`, Status: "Running", StartType: "Automatic", PID: 42, Present: true, Size: 10, SHA256: a, Source: InSync, RunsVia: "directly"},
		{Name: "kube-proxy", Service: "kube-proxy", Destination: `C:\k\kube-proxy.exe`, Status: "Stopped", StartType: "Manual", Present: true, Size: 11, SHA256: a, Source: Differs, RunsVia: "through nssm + PowerShell"},
		{Name: "containerd", Service: "containerd", Destination: `C:\k\containerd.exe`, Status: "Running", Source: NoLocalBuild, RunsVia: "through nssm"},
		{Name: "wins", Service: "rancher-wins", Destination: `C:\k\wins.exe`, Status: NotRegistered, Source: Missing},
	}
	for i := range want {
		if r.Binaries[i] != want[i] {
			t.Errorf("binary %d = %+v\nwant %+v", i, r.Binaries[i], want[i])
		}
	}
	if r.OutOfSync() != 2 || r.Node.Hostname != "WIN-1" {
		t.Errorf("out of sync %d, node %+v", r.OutOfSync(), r.Node)
	}
	if node.known[0] == nil || node.known[1] != nil {
		t.Errorf("known records sent: %v", node.known)
	}
	if _, ok := hashes[`C:\k\kube-proxy.exe`]; !ok {
		t.Error("a hashed binary was not remembered")
	}
}

func TestGatherErrors(t *testing.T) {
	_, err := Gather(context.Background(), &fakeNode{err: errors.New("connection reset")}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "node facts: connection reset") {
		t.Fatalf("err = %v", err)
	}
	r, err := Gather(context.Background(), &fakeNode{}, nil, nil)
	if err != nil || len(r.Binaries) != 0 {
		t.Fatalf("no targets: %+v, %v", r, err)
	}
}

// A binary an interrupted swap covers is never "in sync", even when it
// holds the local build: the new binary may never have passed its checks.
func TestGatherUnfinishedSwap(t *testing.T) {
	a := strings.Repeat("a", 64)
	journal := ops.SwapJournal{Owner: ops.LockOwner{RunID: "r1", Command: "swdt kubernetes"}, Started: "2025-01-01T00:00:00Z",
		Request: ops.ServiceSwapRequest{Items: []ops.SwapItem{{Service: "kubelet", Destination: `C:\k\kubelet.exe`}}}}
	tests := []struct {
		name       string
		inProgress bool
		want       string
		wantSays   string
	}{
		{"interrupted", false, Unfinished, "was interrupted; run swdt kubernetes"},
		{"in progress", true, Swapping, "is in progress"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &fakeNode{
				files:      map[string]ops.FileInfo{`C:\k\kubelet.exe`: {Exists: true, SHA256: a}, `C:\k\kube-proxy.exe`: {Exists: true, SHA256: a}},
				services:   []ops.ServiceInfo{{Name: "kubelet", Exists: true, Status: "Stopped"}, {Name: "kube-proxy", Exists: true, Status: "Running"}},
				unfinished: &ops.UnfinishedSwap{Journal: journal, InProgress: tt.inProgress},
			}
			rep, err := Gather(context.Background(), node, []Target{
				{Name: "kubelet", Service: "kubelet", Destination: `C:\k\kubelet.exe`, WantSHA256: a},
				{Name: "kube-proxy", Service: "kube-proxy", Destination: `C:\k\kube-proxy.exe`, WantSHA256: a},
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Binaries[0].Source != tt.want || rep.Binaries[1].Source != InSync {
				t.Errorf("sources = %q, %q; want %q, %q", rep.Binaries[0].Source, rep.Binaries[1].Source, tt.want, InSync)
			}
			if !strings.Contains(rep.UnfinishedSwap, tt.wantSays) {
				t.Errorf("unfinishedSwap = %q, want it to say %q", rep.UnfinishedSwap, tt.wantSays)
			}
		})
	}
}
