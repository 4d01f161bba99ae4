package hotswap

import (
	"context"
	"io"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/ops"
)

// undecodingNode is a fakeNode that takes compressed uploads on a
// measured remote link, and whose first swap op reports every encoded
// item undecoded: the run sends them again (resend), in parallel.
type undecodingNode struct {
	*fakeNode
	streams int
}

func (u *undecodingNode) UploadStream(_ context.Context, open func() (io.ReadCloser, error), remotePath string, progress func(int64)) (int64, error) {
	rc, err := open()
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	n, err := io.Copy(io.Discard, rc)
	if progress != nil {
		progress(n)
	}
	u.mu.Lock()
	u.streams++
	u.uploads = append(u.uploads, stagedKey(remotePath))
	u.mu.Unlock()
	return n, err
}

func (u *undecodingNode) LinkRTT() (time.Duration, bool) { return 20 * time.Millisecond, true }

func (u *undecodingNode) SwapServices(ctx context.Context, req ops.ServiceSwapRequest) (ops.ServiceSwapResponse, error) {
	if len(u.swaps) > 0 {
		return u.fakeNode.SwapServices(ctx, req)
	}
	u.swaps = append(u.swaps, req)
	var resp ops.ServiceSwapResponse
	for _, it := range req.Items {
		if it.Encoding != "" {
			resp.Undecoded = append(resp.Undecoded, ops.SwapUndecoded{Destination: it.Destination, Error: "damaged stream"})
		}
	}
	return resp, nil
}

// TestResendInParallel runs resend over several undecoded items at once,
// which go test -race checks: each one's record of how it went is written
// while the others are looked at.
func TestResendInParallel(t *testing.T) {
	its := items(t)
	// A few runs: the race detector sees only the interleavings that
	// happen.
	for range 10 {
		f := &undecodingNode{fakeNode: &fakeNode{files: map[string]string{}, services: seedServices(nil)}}
		report, err := Run(context.Background(), f, its, Options{Transfer: Transfer{Compress: delta.Mode{Level: delta.LevelFastest}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range report.Results {
			if res.Action != ActionUpdated || res.Transfer != TransferCompressed {
				t.Fatalf("%s: %s (%s), want updated (compressed): %s", res.Name, res.Action, res.Transfer, res.Error)
			}
		}
		if want := 2 * len(its); f.streams != want {
			t.Fatalf("encoded uploads = %d, want %d (each item twice)", f.streams, want)
		}
	}
}
