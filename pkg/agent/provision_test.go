package agent_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// provCall runs op through the agent's full envelope round trip against
// the simulated node.
func provCall[Req, Resp any](t *testing.T, ts *simnode.TestServer, op ops.Op[Req, Resp], req Req) (Resp, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return agent.Call(ctx, ts.Node().OS(), op, req)
}

// provFailure returns err's kind and message when it is an op failure.
func provFailure(t *testing.T, err error) (kind ops.Kind, message string) {
	t.Helper()
	var f *agent.Failure
	if !errors.As(err, &f) {
		t.Fatalf("err = %v, want an op failure", err)
	}
	return f.Kind, f.Message
}

func provSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestProvisionInspect(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	if err := n.WriteFile(`C:\k\versioned.exe`, []byte("MZ SIMNODE-VERSION=1.29.1 padding.................................................")); err != nil {
		t.Fatal(err)
	}
	resp, err := provCall(t, ts, ops.ProvisionInspect, ops.ProvisionInspectRequest{Targets: []ops.ProvisionTarget{
		{Service: "containerd", Destination: `C:\Program Files\containerd\containerd.exe`},
		{Service: "nosuch", Destination: `C:\k\missing.exe`},
		{Service: "kubelet", Destination: `C:\k\versioned.exe`},
		{Service: "kube-proxy", Destination: `C:\k`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	content, _ := n.ReadFile(`C:\Program Files\containerd\containerd.exe`)
	st, err := n.Stat(`C:\Program Files\containerd\containerd.exe`)
	if err != nil {
		t.Fatal(err)
	}
	versioned, _ := n.ReadFile(`C:\k\versioned.exe`)
	vst, err := n.Stat(`C:\k\versioned.exe`)
	if err != nil {
		t.Fatal(err)
	}
	wantFiles := []ops.FileInfo{
		{Path: `C:\Program Files\containerd\containerd.exe`, Exists: true, Size: int64(len(content)), SHA256: provSum(content), ModTicks: netTicks(st.ModTime)},
		{Path: `C:\k\missing.exe`},
		{Path: `C:\k\versioned.exe`, Exists: true, Size: 82, SHA256: provSum(versioned), Version: "1.29.1", ModTicks: netTicks(vst.ModTime)},
		// A directory is not a file.
		{Path: `C:\k`},
	}
	if !slices.Equal(resp.Files, wantFiles) {
		t.Errorf("files = %+v\nwant %+v", resp.Files, wantFiles)
	}
	var names []string
	for _, s := range resp.Services {
		names = append(names, s.Name)
	}
	// containerd's dependents are followed transitively; kubelet and
	// kube-proxy are reported once.
	if want := []string{"containerd", "nosuch", "kubelet", "kube-proxy"}; !slices.Equal(names, want) {
		t.Errorf("services = %v, want %v", names, want)
	}
	c := resp.Services[0]
	if c.Status != "Running" || c.StartType != "Automatic" || c.PID == 0 || !slices.Equal(c.Dependents, []string{"kubelet"}) ||
		c.BinaryPath != `"C:\Program Files\containerd\containerd.exe" --run-service` || c.DependsOn == nil || len(c.DependsOn) != 0 {
		t.Errorf("containerd = %+v", c)
	}
	if s := resp.Services[1]; s.Exists || s.DependsOn == nil || s.Dependents == nil {
		t.Errorf("missing service = %+v, want exists=false with empty lists", s)
	}
	if k := resp.Services[2]; !slices.Equal(k.DependsOn, []string{"containerd"}) || !slices.Equal(k.Dependents, []string{"kube-proxy"}) {
		t.Errorf("kubelet = %+v", k)
	}
	if p := resp.Services[3]; p.Dependents == nil || len(p.Dependents) != 0 {
		t.Errorf("kube-proxy dependents = %#v, want an empty list", p.Dependents)
	}
}

// The quick check: a Known record whose size and time match is trusted
// (its digest comes back without the file being read); any difference
// means the file is hashed again.
func TestProvisionInspectKnown(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	const dest = `C:\k\kubelet.exe`
	content, _ := n.ReadFile(dest)
	st, err := n.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	ticks := netTicks(st.ModTime)
	recorded := strings.Repeat("d", 64) // not the real digest: proves no re-hash
	tests := []struct {
		name       string
		known      *ops.FileInfo
		wantSHA    string
		wantCached bool
	}{
		{name: "no record", known: nil, wantSHA: provSum(content)},
		{name: "matching record", known: &ops.FileInfo{Size: st.Size, ModTicks: ticks, SHA256: recorded}, wantSHA: recorded, wantCached: true},
		{name: "record without a digest", known: &ops.FileInfo{Size: st.Size, ModTicks: ticks}, wantSHA: provSum(content)},
		{name: "time moved", known: &ops.FileInfo{Size: st.Size, ModTicks: ticks + 1, SHA256: recorded}, wantSHA: provSum(content)},
		{name: "size differs", known: &ops.FileInfo{Size: st.Size + 1, ModTicks: ticks, SHA256: recorded}, wantSHA: provSum(content)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := provCall(t, ts, ops.ProvisionInspect, ops.ProvisionInspectRequest{Targets: []ops.ProvisionTarget{{Service: "kubelet", Destination: dest, Known: tt.known}}})
			if err != nil {
				t.Fatal(err)
			}
			if f := resp.Files[0]; f.SHA256 != tt.wantSHA || f.Cached != tt.wantCached || f.ModTicks != ticks || f.Size != st.Size {
				t.Errorf("file = %+v, want sha %s cached %v", f, tt.wantSHA, tt.wantCached)
			}
		})
	}
}

// ModTicks are .NET ticks of the UTC last-write time, whatever the
// time's zone.
func TestProvisionInspectModTicks(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	resp, err := provCall(t, ts, ops.ProvisionInspect, ops.ProvisionInspectRequest{Targets: []ops.ProvisionTarget{{Destination: `C:\k\kubelet.exe`}}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := ts.Node().Stat(`C:\k\kubelet.exe`)
	if err != nil {
		t.Fatal(err)
	}
	// 621355968000000000 ticks is 1970-01-01T00:00:00Z.
	want := 621355968000000000 + st.ModTime.UTC().UnixNano()/100
	if got := resp.Files[0].ModTicks; got != want || got != netTicks(st.ModTime.In(time.FixedZone("UTC+5", 5*3600))) {
		t.Errorf("modTicks = %d, want %d", got, want)
	}
}

// inspectFiles is what provision-inspect reports of paths that feed no
// service, with their versions left out.
func inspectFiles(t *testing.T, ts *simnode.TestServer, paths ...string) []ops.FileInfo {
	t.Helper()
	req := ops.ProvisionInspectRequest{Targets: []ops.ProvisionTarget{}}
	for _, p := range paths {
		req.Targets = append(req.Targets, ops.ProvisionTarget{Destination: p})
	}
	resp, err := provCall(t, ts, ops.ProvisionInspect, req)
	if err != nil {
		t.Fatal(err)
	}
	for i := range resp.Files {
		resp.Files[i].Version = ""
	}
	return resp.Files
}

func TestProvisionInspectHashesAndRemove(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	if err := n.WriteFile(`C:\k\kubelet.exe.swdt-new`, []byte("new")); err != nil {
		t.Fatal(err)
	}
	hashes := inspectFiles(t, ts, `C:\k\kubelet.exe.swdt-new`, `C:\k\nothing`, `C:\k`)
	st, err := n.Stat(`C:\k\kubelet.exe.swdt-new`)
	if err != nil {
		t.Fatal(err)
	}
	want := []ops.FileInfo{{Path: `C:\k\kubelet.exe.swdt-new`, Exists: true, Size: 3, SHA256: provSum([]byte("new")), ModTicks: netTicks(st.ModTime)}, {Path: `C:\k\nothing`}, {Path: `C:\k`}}
	if !slices.Equal(hashes, want) {
		t.Errorf("hashes = %+v, want %+v", hashes, want)
	}
	if empty := inspectFiles(t, ts); empty == nil || len(empty) != 0 {
		t.Errorf("no paths: %#v; want an empty list", empty)
	}

	tests := []struct {
		name    string
		paths   []string
		removed []string
		kind    ops.Kind
	}{
		{"staged and missing", []string{`C:\k\kubelet.exe.swdt-new`, `C:\k\nothing`}, []string{`C:\k\kubelet.exe.swdt-new`}, ""},
		{"a directory is not a file", []string{`C:\k`}, []string{}, ""},
		{"a running binary is locked", []string{`C:\k\kubelet.exe`}, nil, "locked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := provCall(t, ts, ops.FilesRemove, ops.FilesRemoveRequest{Paths: tt.paths})
			if tt.kind != "" {
				if kind, msg := provFailure(t, err); kind != tt.kind || !strings.Contains(msg, tt.paths[0]) {
					t.Fatalf("failure %s %q, want kind %s naming %s", kind, msg, tt.kind, tt.paths[0])
				}
				return
			}
			if err != nil || !slices.Equal(resp.Removed, tt.removed) {
				t.Fatalf("removed %v, %v; want %v", resp.Removed, err, tt.removed)
			}
		})
	}
	if !n.Exists(`C:\k\kubelet.exe`) || n.Exists(`C:\k\kubelet.exe.swdt-new`) || !n.Exists(`C:\k`) {
		t.Error("files-remove removed the wrong files")
	}
}

// netTicks is t as .NET's DateTime.Ticks in UTC, computed here on its own
// so that the handler's conversion is checked, not repeated.
func netTicks(t time.Time) int64 {
	const secondsFrom1To1970 = 62135596800
	return (secondsFrom1To1970+t.Unix())*10_000_000 + int64(t.Nanosecond()/100)
}
