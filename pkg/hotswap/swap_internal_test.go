package hotswap

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
)

// undecodingNode is a fakeNode whose first swap op reports every encoded
// item undecoded: the run sends them again (resend), in parallel.
type undecodingNode struct {
	*fakeNode
}

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
		f := &undecodingNode{fakeNode: &fakeNode{files: map[string]string{}, services: seedServices(nil),
			caps: node.Capabilities{Encoding: true}, rtt: 20 * time.Millisecond}}
		report, err := Run(context.Background(), f, its, Options{Transfer: Transfer{Compress: delta.Mode{Level: delta.LevelFastest}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range report.Results {
			if res.Action != ActionUpdated || res.Transfer != TransferCompressed {
				t.Fatalf("%s: %s (%s), want updated (compressed): %s", res.Name, res.Action, res.Transfer, res.Error)
			}
		}
		if want := 2 * len(its); len(f.streams) != want {
			t.Fatalf("encoded uploads = %v, want %d (each item twice)", f.streams, want)
		}
	}
}
