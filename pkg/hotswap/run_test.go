package hotswap

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/source"
)

// fakeNode records calls and plays scripted answers; it models only what
// Run decides on. Behaviour on a real node is tested against simnode.
type fakeNode struct {
	mu          sync.Mutex
	files       map[string]string // path -> sha256
	services    []ops.ServiceInfo
	uploadErr   map[string]error
	corrupt     map[string]bool
	swapErr     error
	swapResp    *ops.ServiceSwapResponse
	cancelOnUpl context.CancelFunc

	// unfinished is reported by the first inspect; recoverErrs fail the
	// first swap-recover calls, one each.
	unfinished  *ops.UnfinishedSwap
	recoverErrs []error
	// holder holds the lock for the first holdFor lock calls.
	holder  *ops.LockHolder
	holdFor int

	uploads  []string
	swaps    []ops.ServiceSwapRequest
	recovers []ops.SwapRecoverRequest
	removed  []string
	locks    []ops.NodeLockRequest
	renewed  [][]string
	unlocked []string
	calls    []string

	// caps is what the node says it can do; rtt its link's round trip
	// (with caps.LinkRTT).
	caps node.Capabilities
	rtt  time.Duration
	// streams are the encoded uploads (caps.Encoding), prepared the
	// Prepare* calls, log what the run logged.
	streams  []string
	prepared []string
	log      strings.Builder
}

func (f *fakeNode) Capabilities() node.Capabilities { return f.caps }

func (f *fakeNode) Logger() *slog.Logger { return slog.New(slog.NewTextHandler(fakeLog{f}, nil)) }

// fakeLog writes to the fake's log.
type fakeLog struct{ f *fakeNode }

func (l fakeLog) Write(p []byte) (int, error) {
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	return l.f.log.Write(p)
}

func (f *fakeNode) prepare(what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.prepared = append(f.prepared, what)
}

func (f *fakeNode) PrepareAgent(context.Context) error { f.prepare("agent"); return nil }

func (f *fakeNode) PrepareSession() { f.prepare("session") }

func (f *fakeNode) PrepareOp(name string) { f.prepare("op " + name) }

func (f *fakeNode) PrepareUploads(context.Context) error { f.prepare("uploads"); return nil }

func (f *fakeNode) LinkRTT() (time.Duration, bool) { return f.rtt, f.rtt > 0 }

func (f *fakeNode) WaitLinkRTT(context.Context) (time.Duration, bool) { return f.LinkRTT() }

// UploadStream takes an encoded upload whole (the fake decodes nothing:
// the swap op's digest check passes).
func (f *fakeNode) UploadStream(_ context.Context, open func() (io.ReadCloser, error), remotePath string, progress func(int64)) (int64, error) {
	rc, err := open()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if progress != nil {
		progress(n)
	}
	f.mu.Lock()
	f.streams = append(f.streams, stagedKey(remotePath))
	f.mu.Unlock()
	return n, err
}

// SwapServicesAttached reads the attachments to their end and swaps.
func (f *fakeNode) SwapServicesAttached(ctx context.Context, req ops.ServiceSwapRequest, attachments io.Reader) (ops.ServiceSwapResponse, error) {
	if _, err := io.Copy(io.Discard, attachments); err != nil {
		return ops.ServiceSwapResponse{}, err
	}
	f.calls = append(f.calls, "attached")
	return f.SwapServices(ctx, req)
}

// stagedKey is a staged path without the run's ID, as tests name it.
func stagedKey(p string) string {
	if i := strings.Index(p, ".swdt-new-"); i >= 0 {
		return p[:i] + ".swdt-new"
	}
	return p
}

func (f *fakeNode) InspectProvision(_ context.Context, targets []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error) {
	f.calls = append(f.calls, "inspect")
	return f.inspect(targets), nil
}

// InspectLocked takes the lock unless holder holds it; then it inspects.
func (f *fakeNode) InspectLocked(_ context.Context, req ops.NodeLockRequest, targets []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error) {
	f.mu.Lock()
	f.locks = append(f.locks, req)
	if f.holder != nil && req.Break != f.holder.Owner.RunID && f.holdFor != 0 {
		f.holdFor--
		f.calls = append(f.calls, "lock")
		f.mu.Unlock()
		return ops.ProvisionInspectResponse{Locked: &ops.NodeLockResponse{Holder: f.holder}}, nil
	}
	f.calls = append(f.calls, "lock+inspect")
	f.mu.Unlock()
	resp := f.inspect(targets)
	resp.Locked = &ops.NodeLockResponse{Acquired: true}
	return resp, nil
}

func (f *fakeNode) inspect(targets []ops.ProvisionTarget) ops.ProvisionInspectResponse {
	var resp ops.ProvisionInspectResponse
	resp.Unfinished, f.unfinished = f.unfinished, nil
	for _, t := range targets {
		sha, ok := f.files[t.Destination]
		resp.Files = append(resp.Files, ops.FileInfo{Path: t.Destination, Exists: ok, SHA256: sha})
	}
	resp.Services = f.services
	return resp
}

func (f *fakeNode) MkdirAll(context.Context, string) error { return nil }

func (f *fakeNode) Upload(ctx context.Context, src io.ReaderAt, size int64, remotePath string, progress func(int64)) error {
	f.mu.Lock()
	f.uploads = append(f.uploads, stagedKey(remotePath))
	cancel := f.cancelOnUpl
	f.mu.Unlock()
	if cancel != nil {
		cancel()
		return ctx.Err()
	}
	if err := f.uploadErr[stagedKey(remotePath)]; err != nil {
		return err
	}
	progress(size)
	return nil
}

func (f *fakeNode) RemoveFiles(_ context.Context, paths []string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range paths {
		f.removed = append(f.removed, stagedKey(p))
	}
	return paths, nil
}

// SwapServices checks each staged file's digest as the agent does (a
// corrupt one fails its item) and releases the lock when asked.
func (f *fakeNode) SwapServices(_ context.Context, req ops.ServiceSwapRequest) (ops.ServiceSwapResponse, error) {
	f.swaps = append(f.swaps, req)
	if f.swapErr != nil {
		f.calls = append(f.calls, "swap")
		return ops.ServiceSwapResponse{}, f.swapErr
	}
	var resp ops.ServiceSwapResponse
	if f.swapResp != nil {
		resp = *f.swapResp
	} else {
		for _, it := range req.Items {
			r := ops.SwapItemResult{Service: it.Service, Destination: it.Destination, Result: ops.SwapResultSwapped, DowntimeMs: 1200,
				File: &ops.FileInfo{Path: it.Destination, Exists: true, SHA256: it.SHA256}}
			if f.corrupt[stagedKey(it.Staged)] {
				r = ops.SwapItemResult{Service: it.Service, Destination: it.Destination, Result: ops.SwapResultFailed,
					Error: "staged file " + it.Staged + " has SHA-256 " + strings.Repeat("0", 64) + ", want " + it.SHA256 + ": the upload was corrupted"}
			}
			resp.Items = append(resp.Items, r)
		}
		for i, name := range req.StopOrder {
			resp.Downtime = append(resp.Downtime, ops.ServiceDowntime{Service: name, DowntimeMs: int64(1200 - 100*i), Running: true})
		}
	}
	f.calls = append(f.calls, "swap")
	if req.Unlock {
		f.calls[len(f.calls)-1], resp.Unlocked = "swap+unlock", true
		f.unlocked = append(f.unlocked, req.Owner.RunID)
	}
	return resp, nil
}

func (f *fakeNode) RecoverSwap(_ context.Context, req ops.SwapRecoverRequest) (ops.SwapRecoverResponse, error) {
	f.calls = append(f.calls, "recover")
	f.recovers = append(f.recovers, req)
	if len(f.recoverErrs) > 0 {
		err := f.recoverErrs[0]
		f.recoverErrs = f.recoverErrs[1:]
		return ops.SwapRecoverResponse{}, err
	}
	resp := ops.SwapRecoverResponse{Found: true}
	var items []ops.SwapItem
	if len(f.swaps) > 0 {
		items = f.swaps[len(f.swaps)-1].Items
	}
	for _, it := range items {
		resp.Items = append(resp.Items, ops.SwapRecoverItem{Service: it.Service, Destination: it.Destination, Binary: ops.RecoveredOld, SHA256: "old-sha"})
	}
	return resp, nil
}

func (f *fakeNode) RenewLock(_ context.Context, _ string, staged []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if staged != nil {
		f.renewed = append(f.renewed, staged)
	}
	return nil
}

func (f *fakeNode) Unlock(_ context.Context, runID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "unlock")
	f.unlocked = append(f.unlocked, runID)
	return nil
}

// items returns the three seed provisioners with real local source files
// whose digest is "staged-ok".
func items(t *testing.T) []Item {
	dir := t.TempDir()
	var out []Item
	for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
		p := filepath.Join(dir, name+".exe")
		if err := os.WriteFile(p, []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, Item{Name: name, Service: name, Destination: `C:\k\` + name + ".exe", Source: &source.File{Ref: p, Path: p, Size: int64(len(name)), SHA256: "staged-ok"}})
	}
	return out
}

func actions(r *Report) []string {
	var out []string
	for _, res := range r.Results {
		out = append(out, res.Name+"="+string(res.Action))
	}
	return out
}

// downtimeList lists the report's stopped services as "name=downtime",
// with "(down)" for one that did not run again.
func downtimeList(r *Report) []string {
	var out []string
	for _, d := range r.Services {
		s := d.Service + "=" + d.Downtime.String()
		if !d.Running {
			s += "(down)"
		}
		out = append(out, s)
	}
	return out
}

func TestRun(t *testing.T) {
	errLost, errOrphan, errReset := errors.New("connection lost"), errors.New("orphan would not exit"), errors.New("connection reset")
	tests := []struct {
		name         string
		setup        func(f *fakeNode)
		opts         Options
		want         []string
		wantStops    []string
		wantRecovers int
		wantRemoved  []string
		wantErrIn    map[string]string
		// wantErr is, by item, the error its Err must be (errors.Is), or
		// be a *SwapFailure (nil).
		wantErr map[string]error
		// wantLeft is what each failure says it left on the node.
		wantLeft string
		// wantDown is the report's downtime of every stopped service.
		wantDown []string

		// caps and rtt are what the node can do and its link's round
		// trip; known runs instead the rebuild of kubelet alone on a node
		// the run knows (--watch): patches made ahead, the one-op path.
		caps  node.Capabilities
		rtt   time.Duration
		known bool
		// wantTransfer is how every updated item travelled (plain when
		// empty); wantPrepared the Prepare* calls, sorted (unchecked when
		// nil); wantOneOp whether the run went in one swap op;
		// wantLog is in what the run logged.
		wantTransfer string
		wantPrepared []string
		wantOneOp    bool
		wantLog      string
	}{
		{
			name:      "all updated in dependency order",
			want:      []string{"containerd=updated", "kubelet=updated", "kube-proxy=updated"},
			wantStops: []string{"kube-proxy", "kubelet", "containerd"},
			wantDown:  []string{"kube-proxy=1.2s", "kubelet=1.1s", "containerd=1s"},
		},
		{
			name: "unchanged binaries are skipped and nothing is swapped",
			setup: func(f *fakeNode) {
				f.files = map[string]string{`C:\k\containerd.exe`: "staged-ok", `C:\k\kubelet.exe`: "staged-ok", `C:\k\kube-proxy.exe`: "staged-ok"}
			},
			want: []string{"containerd=unchanged", "kubelet=unchanged", "kube-proxy=unchanged"},
		},
		{
			name: "force replaces unchanged binaries",
			setup: func(f *fakeNode) {
				f.files = map[string]string{`C:\k\containerd.exe`: "staged-ok", `C:\k\kubelet.exe`: "staged-ok", `C:\k\kube-proxy.exe`: "staged-ok"}
			},
			opts:      Options{Force: true},
			want:      []string{"containerd=updated", "kubelet=updated", "kube-proxy=updated"},
			wantStops: []string{"kube-proxy", "kubelet", "containerd"},
			wantDown:  []string{"kube-proxy=1.2s", "kubelet=1.1s", "containerd=1s"},
		},
		{
			name: "dry run changes nothing",
			opts: Options{DryRun: true},
			want: []string{"containerd=update", "kubelet=update", "kube-proxy=update"},
		},
		{
			// The swap op removes it (TestServiceSwapReverifiesStagedFiles).
			name: "a corrupted staged file fails and only the others swap",
			setup: func(f *fakeNode) {
				f.corrupt = map[string]bool{`C:\k\kubelet.exe.swdt-new`: true}
			},
			want:      []string{"containerd=updated", "kubelet=failed", "kube-proxy=updated"},
			wantStops: []string{"kube-proxy", "kubelet", "containerd"},
			wantErrIn: map[string]string{"kubelet": "the upload was corrupted"},
			wantErr:   map[string]error{"kubelet": nil},
			wantDown:  []string{"kube-proxy=1.2s", "kubelet=1.1s", "containerd=1s"},
		},
		{
			name: "a failed upload leaves its service alone",
			setup: func(f *fakeNode) {
				f.uploadErr = map[string]error{`C:\k\containerd.exe.swdt-new`: errLost}
			},
			wantErr:   map[string]error{"containerd": errLost},
			want:      []string{"containerd=failed", "kubelet=updated", "kube-proxy=updated"},
			wantStops: []string{"kube-proxy", "kubelet"},
			wantErrIn: map[string]string{"containerd": "connection lost"},
			wantDown:  []string{"kube-proxy=1.2s", "kubelet=1.1s"},
		},
		{
			name: "a dependent the swap stopped has its downtime reported",
			setup: func(f *fakeNode) {
				f.uploadErr = map[string]error{`C:\k\containerd.exe.swdt-new`: errLost, `C:\k\kube-proxy.exe.swdt-new`: errLost}
			},
			want:      []string{"containerd=failed", "kubelet=updated", "kube-proxy=failed"},
			wantStops: []string{"kube-proxy", "kubelet"},
			wantErrIn: map[string]string{"containerd": "connection lost", "kube-proxy": "connection lost"},
			wantDown:  []string{"kube-proxy=1.2s", "kubelet=1.1s"},
		},
		{
			name:        "a failing before-swap hook touches no service",
			opts:        Options{BeforeSwap: func(context.Context) error { return errOrphan }},
			wantErr:     map[string]error{"containerd": errOrphan, "kubelet": errOrphan, "kube-proxy": errOrphan},
			wantLeft:    untouched,
			want:        []string{"containerd=failed", "kubelet=failed", "kube-proxy=failed"},
			wantRemoved: []string{`C:\k\containerd.exe.swdt-new`, `C:\k\kubelet.exe.swdt-new`, `C:\k\kube-proxy.exe.swdt-new`},
			wantErrIn:   map[string]string{"kubelet": "orphan would not exit; no service was touched"},
		},
		{
			name:         "a failed swap op is repaired",
			setup:        func(f *fakeNode) { f.swapErr = errReset },
			wantErr:      map[string]error{"kubelet": errReset},
			wantLeft:     "repaired: ",
			want:         []string{"containerd=failed", "kubelet=failed", "kube-proxy=failed"},
			wantStops:    []string{"kube-proxy", "kubelet", "containerd"},
			wantRecovers: 1,
			wantErrIn:    map[string]string{"kubelet": "connection reset; repaired: kubelet runs the old binary again"},
			wantDown:     nil, // the op's own report is lost with it
		},
		{
			name: "a rolled-back item carries the service's exit code and events",
			setup: func(f *fakeNode) {
				f.swapResp = &ops.ServiceSwapResponse{Items: []ops.SwapItemResult{
					{Service: "containerd", Destination: `C:\k\containerd.exe`, Result: ops.SwapResultSwapped},
					{Service: "kubelet", Destination: `C:\k\kubelet.exe`, Result: ops.SwapResultRolledBack, Error: "service stopped again", ExitCode: 1, Events: []string{"The kubelet service terminated unexpectedly."}},
					{Service: "kube-proxy", Destination: `C:\k\kube-proxy.exe`, Result: ops.SwapResultSwapped},
				}, Killed: []string{"containerd"}, Downtime: []ops.ServiceDowntime{
					{Service: "kube-proxy", DowntimeMs: 3000, Running: true},
					{Service: "kubelet", DowntimeMs: 3500},
					{Service: "containerd", DowntimeMs: 800, Running: true},
				}}
			},
			want:      []string{"containerd=updated", "kubelet=rolled-back", "kube-proxy=updated"},
			wantStops: []string{"kube-proxy", "kubelet", "containerd"},
			wantErrIn: map[string]string{"kubelet": "service stopped again"},
			wantErr:   map[string]error{"kubelet": nil},
			wantDown:  []string{"kube-proxy=3s", "kubelet=3.5s(down)", "containerd=800ms"},
		},
		// Each capability, with and without.
		{
			name:         "encoding: files go compressed",
			caps:         node.Capabilities{Encoding: true, LinkRTT: true},
			rtt:          20 * time.Millisecond,
			opts:         Options{Transfer: Transfer{Compress: delta.Mode{Level: delta.LevelFastest}}},
			want:         []string{"containerd=updated", "kubelet=updated", "kube-proxy=updated"},
			wantStops:    []string{"kube-proxy", "kubelet", "containerd"},
			wantDown:     []string{"kube-proxy=1.2s", "kubelet=1.1s", "containerd=1s"},
			wantTransfer: TransferCompressed,
			wantLog:      "encoded=true",
		},
		{
			name:      "without encoding: files go as they are though compression is asked for",
			rtt:       20 * time.Millisecond,
			opts:      Options{Transfer: Transfer{Compress: delta.Mode{Level: delta.LevelFastest}}},
			want:      []string{"containerd=updated", "kubelet=updated", "kube-proxy=updated"},
			wantStops: []string{"kube-proxy", "kubelet", "containerd"},
			wantDown:  []string{"kube-proxy=1.2s", "kubelet=1.1s", "containerd=1s"},
			wantLog:   "encoded=false",
		},
		{
			name:      "a link measured as local: auto sends files as they are",
			caps:      node.Capabilities{Encoding: true, LinkRTT: true},
			rtt:       time.Millisecond,
			opts:      Options{Transfer: Transfer{Compress: delta.Mode{Auto: true}}},
			want:      []string{"containerd=updated", "kubelet=updated", "kube-proxy=updated"},
			wantStops: []string{"kube-proxy", "kubelet", "containerd"},
			wantDown:  []string{"kube-proxy=1.2s", "kubelet=1.1s", "containerd=1s"},
			wantLog:   "linkMeasured=true",
		},
		{
			name:         "a link not measured: auto compresses",
			caps:         node.Capabilities{Encoding: true},
			opts:         Options{Transfer: Transfer{Compress: delta.Mode{Auto: true}}},
			want:         []string{"containerd=updated", "kubelet=updated", "kube-proxy=updated"},
			wantStops:    []string{"kube-proxy", "kubelet", "containerd"},
			wantDown:     []string{"kube-proxy=1.2s", "kubelet=1.1s", "containerd=1s"},
			wantTransfer: TransferCompressed,
			wantLog:      "linkMeasured=false",
		},
		{
			name:         "uploads prepared ahead",
			caps:         node.Capabilities{UploadsAhead: true},
			want:         []string{"containerd=updated", "kubelet=updated", "kube-proxy=updated"},
			wantStops:    []string{"kube-proxy", "kubelet", "containerd"},
			wantDown:     []string{"kube-proxy=1.2s", "kubelet=1.1s", "containerd=1s"},
			wantPrepared: []string{"agent", "uploads"},
			wantLog:      "uploadsAhead=true",
		},
		{
			name:         "ops prepared ahead",
			caps:         node.Capabilities{OpsAhead: true},
			want:         []string{"containerd=updated", "kubelet=updated", "kube-proxy=updated"},
			wantStops:    []string{"kube-proxy", "kubelet", "containerd"},
			wantDown:     []string{"kube-proxy=1.2s", "kubelet=1.1s", "containerd=1s"},
			wantPrepared: []string{"agent", "session"},
			wantLog:      "opsAhead=true",
		},
		{
			name:         "nothing prepared ahead without either",
			want:         []string{"containerd=updated", "kubelet=updated", "kube-proxy=updated"},
			wantStops:    []string{"kube-proxy", "kubelet", "containerd"},
			wantDown:     []string{"kube-proxy=1.2s", "kubelet=1.1s", "containerd=1s"},
			wantPrepared: []string{"agent"},
			wantLog:      "opsAhead=false uploadsAhead=false",
		},
		{
			name:         "a known node's rebuild in one op, its patch attached",
			caps:         node.Capabilities{Encoding: true, Attachments: true, LinkRTT: true, OpsAhead: true},
			rtt:          20 * time.Millisecond,
			known:        true,
			want:         []string{"kubelet=updated"},
			wantStops:    []string{"kube-proxy", "kubelet"},
			wantDown:     []string{"kube-proxy=1.2s", "kubelet=1.1s"},
			wantTransfer: TransferPatch,
			wantPrepared: []string{"agent", "op " + ops.ServiceSwap.Name, "session"},
			wantOneOp:    true,
			wantLog:      "attachments=true oneOp=true",
		},
		{
			name:         "without attachments: in one op, its patch in the request",
			caps:         node.Capabilities{Encoding: true, LinkRTT: true},
			rtt:          20 * time.Millisecond,
			known:        true,
			want:         []string{"kubelet=updated"},
			wantStops:    []string{"kube-proxy", "kubelet"},
			wantDown:     []string{"kube-proxy=1.2s", "kubelet=1.1s"},
			wantTransfer: TransferPatch,
			wantPrepared: []string{"agent"},
			wantOneOp:    true,
			wantLog:      "attachments=false oneOp=true",
		},
		{
			name:      "without encoding: no patch and no one op",
			caps:      node.Capabilities{Attachments: true, LinkRTT: true, OpsAhead: true},
			rtt:       20 * time.Millisecond,
			known:     true,
			want:      []string{"kubelet=updated"},
			wantStops: []string{"kube-proxy", "kubelet"},
			wantDown:  []string{"kube-proxy=1.2s", "kubelet=1.1s"},
			wantLog:   "patches=false attachments=true oneOp=false",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeNode{files: map[string]string{}, services: seedServices(nil), caps: tt.caps, rtt: tt.rtt}
			if tt.setup != nil {
				tt.setup(f)
			}
			its, opts := items(t), tt.opts
			if tt.known {
				its, opts = knownRebuild(t, f)
			}
			report, err := Run(context.Background(), f, its, opts)
			if err != nil {
				t.Fatal(err)
			}
			// A run in one op starts with the swap op (its attachments
			// first when it has some), which takes the lock itself.
			first := ""
			if len(f.calls) > 0 {
				first = f.calls[0]
			}
			if oneOp := first == "attached" || strings.HasPrefix(first, "swap"); oneOp != tt.wantOneOp {
				t.Errorf("in one op: %v, want %v (calls %v)", oneOp, tt.wantOneOp, f.calls)
			}
			if attached := first == "attached"; attached != (tt.wantOneOp && tt.caps.Attachments) {
				t.Errorf("patches attached: %v, want %v (calls %v)", attached, !attached, f.calls)
			}
			if tt.wantPrepared != nil {
				slices.Sort(f.prepared)
				if !slices.Equal(f.prepared, tt.wantPrepared) {
					t.Errorf("prepared %v, want %v", f.prepared, tt.wantPrepared)
				}
			}
			if !strings.Contains(f.log.String(), tt.wantLog) {
				t.Errorf("log %q, want %q in it", f.log.String(), tt.wantLog)
			}
			if got := actions(report); strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Fatalf("actions = %v, want %v", got, tt.want)
			}
			var stops []string
			if len(f.swaps) > 0 {
				stops = f.swaps[0].StopOrder
			}
			if strings.Join(stops, ",") != strings.Join(tt.wantStops, ",") {
				t.Errorf("stop order = %v, want %v", stops, tt.wantStops)
			}
			if len(f.recovers) != tt.wantRecovers {
				t.Errorf("recovers = %d, want %d", len(f.recovers), tt.wantRecovers)
			}
			if strings.Join(f.removed, ",") != strings.Join(tt.wantRemoved, ",") {
				t.Errorf("removed = %v, want %v", f.removed, tt.wantRemoved)
			}
			if got := downtimeList(report); strings.Join(got, " ") != strings.Join(tt.wantDown, " ") {
				t.Errorf("services' downtime = %v, want %v", got, tt.wantDown)
			}
			for _, res := range report.Results {
				if want, ok := tt.wantErrIn[res.Name]; ok && !strings.Contains(res.Error, want) {
					t.Errorf("%s error = %q, want it to contain %q", res.Name, res.Error, want)
				}
				if res.Failed() != (res.Err != nil) || res.Err != nil && res.Err.Error() != res.Error {
					t.Errorf("%s: %s with Err %v and Error %q", res.Name, res.Action, res.Err, res.Error)
				}
				var sf *SwapFailure
				if want, ok := tt.wantErr[res.Name]; ok && want == nil && !errors.As(res.Err, &sf) {
					t.Errorf("%s: Err %v (%T), want a *SwapFailure", res.Name, res.Err, res.Err)
				} else if ok && want != nil && !errors.Is(res.Err, want) {
					t.Errorf("%s: Err %v, want %v", res.Name, res.Err, want)
				}
				var ie *ItemError
				if tt.wantLeft != "" && res.Failed() && (!errors.As(res.Err, &ie) || len(ie.Left) == 0 || !strings.HasPrefix(ie.Left[0], tt.wantLeft)) {
					t.Errorf("%s: Err %v, want it to say it left %q", res.Name, res.Err, tt.wantLeft)
				}
				if res.Action != ActionUpdated {
					continue
				}
				if want := cmp.Or(tt.wantTransfer, TransferPlain); res.Transfer != want {
					t.Errorf("%s went %s, want %s", res.Name, res.Transfer, want)
				}
				if res.Transfer == TransferPlain && !tt.known && res.BytesSent != int64(len(res.Name)) {
					t.Errorf("%s bytes sent = %d", res.Name, res.BytesSent)
				}
			}
		})
	}
}

// knownRebuild is the rebuild of kubelet on a node the run knows, as
// under --watch: the hash cache and the last inspect say what the node
// has, and its patch is being made ahead.
func knownRebuild(t *testing.T, f *fakeNode) ([]Item, Options) {
	old := bytes.Repeat([]byte("MZ the build on the node, "), 40)
	next := append(bytes.Clone(old[:500]), []byte("a statement added")...)
	next = append(next, old[500:]...)
	dest := `C:\k\kubelet.exe`
	src, store, hashes := aheadFixture(t, dest, old, next)
	f.files[dest] = sha(old)
	its := []Item{{Name: "kubelet", Service: "kubelet", Destination: dest,
		Source: &source.File{Ref: src, Path: src, Size: int64(len(next)), SHA256: sha(next)}}}
	opts := Options{Hashes: hashes, Transfer: Transfer{Compress: delta.Mode{Auto: true}, Store: store, ExpectedRTT: 20 * time.Millisecond},
		Knowledge: NewKnowledge(&ops.ProvisionInspectResponse{Files: []ops.FileInfo{{Path: dest, Exists: true, SHA256: sha(old)}}, Services: f.services})}
	opts.Ahead = Prepare(context.Background(), its, opts)
	t.Cleanup(func() { opts.Ahead.Close() })
	return its, opts
}

func TestRunInterruptedWhileStagingTouchesNoService(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeNode{files: map[string]string{}, services: seedServices(nil), cancelOnUpl: cancel}
	report, err := Run(ctx, f, items(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.swaps) != 0 {
		t.Fatalf("a swap ran after the interrupt: %+v", f.swaps)
	}
	for _, res := range report.Results {
		if res.Action != ActionFailed {
			t.Errorf("%s: action %s, want failed", res.Name, res.Action)
		}
	}
}
