package hotswap_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/hashcache"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// countingLink counts the uploads of a node and the inline patches of its
// swap requests.
type countingLink struct {
	link
	uploads, inline atomic.Int32
}

func (c *countingLink) Upload(ctx context.Context, src io.ReaderAt, size int64, remotePath string, progress func(int64)) error {
	c.uploads.Add(1)
	return c.link.Upload(ctx, src, size, remotePath, progress)
}

func (c *countingLink) UploadStream(ctx context.Context, open func() (io.ReadCloser, error), remotePath string, progress func(int64)) (int64, error) {
	c.uploads.Add(1)
	return c.link.UploadStream(ctx, open, remotePath, progress)
}

func (c *countingLink) SwapServices(ctx context.Context, req ops.ServiceSwapRequest) (ops.ServiceSwapResponse, error) {
	for _, it := range req.Items {
		if len(it.Data) > 0 {
			c.inline.Add(1)
		}
	}
	return c.link.SwapServices(ctx, req)
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestPatchMadeAhead(t *testing.T) {
	v1 := exe(1, 3<<20)
	v2 := bytes.Clone(v1)
	copy(v2[1<<20:], "a rebuilt function")
	other := exe(7, 3<<20) // nothing in common with v1: a patch larger than InlineLimit

	tests := []struct {
		name string
		next []byte
		// recorded is what the hash cache says the node has (nil: v1, as
		// it does).
		recorded []byte
		rtt      time.Duration // 0: 20 ms
		// duringStage runs when staging starts, after the inspect.
		duringStage  func(t *testing.T, ts *simnode.TestServer)
		wantTransfer string
		wantStep     string
		// wantUploads and wantInline count uploads and inline patches.
		wantUploads, wantInline int32
	}{
		{name: "a small patch travels in the swap request", next: v2,
			wantTransfer: hotswap.TransferPatch, wantInline: 1, wantStep: "kubelet: its patch, 0.1 KiB, goes in the swap request"},
		{name: "a patch over the inline limit is uploaded as it is made", next: other,
			wantTransfer: hotswap.TransferPatch, wantUploads: 1},
		{name: "a record that is not what the node has: the patch is made again", next: v2, recorded: flip(v1),
			wantTransfer: hotswap.TransferPatch, wantUploads: 1},
		{name: "on a local network the file goes as it is", next: v2, rtt: time.Millisecond,
			wantTransfer: hotswap.TransferPlain, wantUploads: 1},
		{name: "an inline patch that does not rebuild the file falls back to the whole file", next: v2,
			duringStage: func(t *testing.T, ts *simnode.TestServer) {
				if err := ts.Node().Rename(kubelet, kubelet+".moved", false); err != nil {
					t.Error(err)
				}
				if err := ts.Node().WriteFile(kubelet, flip(v1)); err != nil {
					t.Error(err)
				}
			},
			wantTransfer: hotswap.TransferCompressed, wantStep: "SHA-256", wantInline: 1, wantUploads: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			rtt := tc.rtt
			if rtt == 0 {
				rtt = 20 * time.Millisecond
			}
			n := &countingLink{link: link{Node: connect(t, ts), rtt: rtt}}
			store := &delta.Store{Dir: t.TempDir()}
			hashes := hashcache.Open(filepath.Join(t.TempDir(), "hashes.json"))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			opts := hotswap.Options{Settle: 0, Hashes: hashes,
				Transfer: hotswap.Transfer{Compress: delta.Mode{Auto: true}, Store: store}}
			first := []hotswap.Item{{Name: "kubelet", Service: "kubelet", Destination: kubelet, Source: sourceFile(t, "v1.exe", v1)}}
			if rep, err := hotswap.Run(ctx, n, first, opts); err != nil || rep.Results[0].Action != hotswap.ActionUpdated {
				t.Fatalf("first push: %+v, %v", rep, err)
			}
			if tc.recorded != nil {
				f := *hashes.Known(kubelet)
				// Another time too, or the node would trust the record.
				f.SHA256, f.ModTicks = digest(tc.recorded), f.ModTicks+1
				hashes.Remember(kubelet, f)
				if err := store.Put(f.SHA256, bytes.NewReader(tc.recorded), int64(len(tc.recorded))); err != nil {
					t.Fatal(err)
				}
			}
			n.uploads.Store(0)
			items := []hotswap.Item{{Name: "kubelet", Service: "kubelet", Destination: kubelet, Source: sourceFile(t, "v2.exe", tc.next)}}
			ahead := hotswap.Prepare(ctx, items, opts)
			defer ahead.Close()
			obs := &hookObserver{}
			if tc.duringStage != nil {
				obs.onUpload = func() { tc.duringStage(t, ts) }
			}
			opts.Ahead, opts.Observer = ahead, obs
			rep, err := hotswap.Run(ctx, n, items, opts)
			if err != nil {
				t.Fatal(err)
			}
			r := rep.Results[0]
			if r.Action != hotswap.ActionUpdated || r.Error != "" || r.Transfer != tc.wantTransfer {
				t.Fatalf("second push: %+v, want transfer %s", r, tc.wantTransfer)
			}
			if got, inline := n.uploads.Load(), n.inline.Load(); got != tc.wantUploads || inline != tc.wantInline {
				t.Errorf("%d uploads, %d inline patches; want %d, %d", got, inline, tc.wantUploads, tc.wantInline)
			}
			if tc.wantStep != "" && !strings.Contains(strings.Join(obs.steps, "\n"), tc.wantStep) {
				t.Errorf("steps %q lack %q", obs.steps, tc.wantStep)
			}
			got, err := ts.Node().ReadFile(kubelet)
			if err != nil || !bytes.Equal(got, tc.next) {
				t.Fatalf("the destination does not hold the new binary (%v)", err)
			}
			if tc.wantTransfer != hotswap.TransferPlain {
				f, _, err := store.Open(digest(tc.next))
				if err != nil {
					t.Errorf("no copy of what was sent kept for the next patch: %v", err)
				} else {
					f.Close()
				}
			}
			entries, err := ts.Node().List(`C:\k`)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.Contains(e.Name, ".swdt-zst") || strings.Contains(e.Name, ".swdt-new") || strings.Contains(e.Name, ".swdt-part") {
					t.Errorf("left on the node: %s", e.Name)
				}
			}
		})
	}
}
