package provision

import (
	"context"
	"debug/pe"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/agentbin"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/source"
)

// peBuild is a PE image for machine (the headers binfmt reads), marked
// with what so that two builds differ.
func peBuild(machine uint16, what string) []byte {
	b := make([]byte, 64)
	copy(b, "MZ")
	binary.LittleEndian.PutUint32(b[0x3c:], 64)
	b = append(b, "PE\x00\x00"...)
	coff := make([]byte, 20)
	binary.LittleEndian.PutUint16(coff, machine)
	return append(append(b, coff...), what...)
}

// elfBuild is the header of a linux/amd64 ELF executable: a kubelet built
// without KUBE_BUILD_PLATFORMS.
func elfBuild() []byte {
	b := make([]byte, 64)
	copy(b, "\x7fELF")
	b[4], b[5], b[6] = 2, 1, 1                // 64-bit, little-endian, version 1
	binary.LittleEndian.PutUint16(b[16:], 2)  // ET_EXEC
	binary.LittleEndian.PutUint16(b[18:], 62) // EM_X86_64
	binary.LittleEndian.PutUint32(b[20:], 1)
	binary.LittleEndian.PutUint16(b[52:], 64) // e_ehsize
	return b
}

// kubeletNode is a node file of one node, ts, whose kubelet's source is src.
func kubeletNode(ts *simnode.TestServer, src string) []v1alpha1.Node {
	nodes := []v1alpha1.Node{{}}
	nodes[0].Name = "sim"
	nodes[0].Spec.Credentials = ts.Credentials()
	nodes[0].Spec.Kubernetes.Provisioners = []v1alpha1.ProvisionerSpec{{Name: "kubelet", SourceURL: src, Destination: `C:\k\kubelet.exe`}}
	return nodes
}

func connectSim(ctx context.Context, spec *v1alpha1.Node, warn func(string)) (*node.Node, error) {
	return node.Connect(ctx, *spec, node.ConnectOptions{Warn: warn})
}

// A build for another OS or another architecture than the node's is
// refused before anything is sent, saying what it is and what the node
// is; one for the node's architecture is swapped in, on ARM64 by the
// arm64 agent (the node's architecture picks both).
func TestBuildForAnotherArchIsRefused(t *testing.T) {
	tests := []struct {
		name, arch string
		build      []byte
		refused    string // "" when swapped
	}{
		{"arm64 build, amd64 node", "amd64", peBuild(pe.IMAGE_FILE_MACHINE_ARM64, "kubelet"),
			"is a PE image for windows/arm64, but the node is windows/amd64: build it with GOOS=windows GOARCH=amd64"},
		{"amd64 build, arm64 node", "arm64", peBuild(pe.IMAGE_FILE_MACHINE_AMD64, "kubelet"),
			"is a PE image for windows/amd64, but the node is windows/arm64: build it with GOOS=windows GOARCH=arm64 (for Kubernetes, KUBE_BUILD_PLATFORMS=windows/arm64)"},
		{"linux build, amd64 node", "amd64", elfBuild(),
			"is an ELF executable for linux/amd64, but the node is windows/amd64"},
		{"arm64 build, arm64 node", "arm64", peBuild(pe.IMAGE_FILE_MACHINE_ARM64, "kubelet"), ""},
		{"amd64 build, amd64 node", "amd64", peBuild(pe.IMAGE_FILE_MACHINE_AMD64, "kubelet"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithDelays(simnode.Delays{}), simnode.WithOptions(func(o *simnode.Options) { o.Arch = tc.arch }))
			dir := t.TempDir()
			src := filepath.Join(dir, "kubelet.exe")
			if err := os.WriteFile(src, tc.build, 0o644); err != nil {
				t.Fatal(err)
			}
			before, err := ts.Node().ReadFile(`C:\k\kubelet.exe`)
			if err != nil {
				t.Fatal(err)
			}
			var results []fleet.Result[NodeReport]
			err = Run(context.Background(), kubeletNode(ts, src), connectSim, Options{
				CacheDir: filepath.Join(dir, "cache"), Resolver: &source.Resolver{CacheDir: filepath.Join(dir, "cache")},
				Swap: hotswap.Options{Settle: 0}, Observer: nopObserver{},
				Report: func(r []fleet.Result[NodeReport]) error { results = r; return nil },
			})
			after, rerr := ts.Node().ReadFile(`C:\k\kubelet.exe`)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if len(results) != 1 || results[0].Value.Report == nil || len(results[0].Value.Results) != 1 {
				t.Fatalf("Run: %v; results %+v", err, results)
			}
			res := results[0].Value.Results[0]
			if tc.refused == "" {
				if err != nil || res.Action != hotswap.ActionUpdated || string(after) != string(tc.build) {
					t.Errorf("Run: %v; kubelet %s; the node holds %q", err, res.Action, after)
				}
				// The agent that ran is the one for the node's architecture.
				sum, derr := agentbin.Digest(tc.arch)
				if derr != nil {
					t.Fatal(derr)
				}
				if _, serr := ts.Node().OS().Stat(ops.AgentPath(sum)); serr != nil {
					t.Errorf("no %s agent on the %s node: %v", tc.arch, tc.arch, serr)
				}
				return
			}
			if err == nil || res.Action != hotswap.ActionFailed || !strings.Contains(res.Error, tc.refused) || !strings.Contains(res.Error, "nothing was sent") {
				t.Errorf("Run: %v; kubelet %s: %s\nwant it refused: %s", err, res.Action, res.Error, tc.refused)
			}
			if string(after) != string(before) || res.BytesSent != 0 {
				t.Errorf("the node's kubelet.exe holds %q, %d bytes sent; want it unchanged and nothing sent", after, res.BytesSent)
			}
			if names, _ := ts.Node().OS().ReadDir(`C:\k`); strings.Contains(strings.Join(names, " "), ".swdt-") {
				t.Errorf("files staged on the node: %v", names)
			}
		})
	}
}

// Under --watch each rebuild is checked: one for another architecture is
// refused before it is sent (the node keeps the last good build), and the
// next good one is swapped.
func TestWatchRefusesARebuildForAnotherArch(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithDelays(simnode.Delays{}))
	dir := t.TempDir()
	src := filepath.Join(dir, "kubelet.exe")
	write := func(b []byte) {
		t.Helper()
		if err := os.WriteFile(src+".tmp", b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(src+".tmp", src); err != nil {
			t.Fatal(err)
		}
	}
	good := peBuild(pe.IMAGE_FILE_MACHINE_AMD64, "build 1")
	write(good)
	w := startWatch(t, ts, src, dir, nil, hotswap.Transfer{})
	w.next(t, "first run")
	write(peBuild(pe.IMAGE_FILE_MACHINE_ARM64, "build 2"))
	select {
	case r := <-w.reports:
		got := r[0].Value.Results
		if r[0].Err != nil || len(got) != 1 || got[0].Action != hotswap.ActionFailed || !strings.Contains(got[0].Error, "PE image for windows/arm64, but the node is windows/amd64") {
			t.Fatalf("the arm64 rebuild: %v; results %+v, want it refused", r[0].Err, got)
		}
	case err := <-w.done:
		t.Fatalf("the watch ended: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("no report for the arm64 rebuild")
	}
	if got, err := ts.Node().ReadFile(`C:\k\kubelet.exe`); err != nil || string(got) != string(good) {
		t.Errorf("after the refused rebuild the node's kubelet.exe holds %q (%v)", got, err)
	}
	write(peBuild(pe.IMAGE_FILE_MACHINE_AMD64, "build 3"))
	w.next(t, "the good rebuild")
	w.stop(t)
}
