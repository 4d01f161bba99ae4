package hotswap_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
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

// inspectCounting counts the lock+inspect ops besides countingLink's
// counts.
type inspectCounting struct {
	*countingLink
	inspects atomic.Int32
}

func (c *inspectCounting) InspectLocked(ctx context.Context, lock ops.NodeLockRequest, targets []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error) {
	c.inspects.Add(1)
	return c.countingLink.InspectLocked(ctx, lock, targets)
}

// A rebuild on a node the process knows (--watch), whose change is a
// small patch made ahead against the file swdt put there, goes in one op:
// the swap takes the lock itself. A node another run holds locked, and
// one whose file changed since, are handled as without it.
func TestRebuildInOneOp(t *testing.T) {
	v1 := exe(1, 3<<20)
	v2 := bytes.Clone(v1)
	copy(v2[1<<20:], "a rebuilt function")
	tests := []struct {
		name string
		// before runs before the rebuild's run.
		before       func(t *testing.T, ts *simnode.TestServer, n *inspectCounting, store *delta.Store)
		wantInspects int32
		wantTransfer string
		wantLocked   bool
		// newProcess: the rebuild's run is another process, which knows
		// the node from the hash cache.
		newProcess bool
		// rebuild is the rebuild (nil: v2).
		rebuild []byte
		// hooks is how many times the run's ReadBeforeSwap and BeforeSwap
		// must run (0: the run has none), each before the node's file
		// changes; the reading one runs again when the node refuses the
		// one op.
		hooks [2]int
	}{
		{name: "a small patch: one op, no inspect", wantTransfer: hotswap.TransferPatch},
		{name: "another process, from the hash cache: one op, no inspect", wantTransfer: hotswap.TransferPatch, newProcess: true},
		{name: "a hook that reads before the swap (a cluster check): one op, the hook before it", wantTransfer: hotswap.TransferPatch, hooks: [2]int{1, 0}},
		{name: "a hook that acts before the swap (a snapshot): the usual way", wantInspects: 1, wantTransfer: hotswap.TransferPatch, hooks: [2]int{1, 1}},
		{name: "another process, a service stopped since: the usual way", wantInspects: 1, wantTransfer: hotswap.TransferPatch, newProcess: true,
			before: func(t *testing.T, ts *simnode.TestServer, _ *inspectCounting, store *delta.Store) {
				for _, name := range []string{"kube-proxy", "kubelet"} {
					if err := ts.Node().StopService(name); err != nil {
						t.Fatal(err)
					}
					if _, err := ts.Node().WaitService(context.Background(), name, simnode.StatusStopped, time.Minute); err != nil {
						t.Fatal(err)
					}
				}
			}},
		{name: "another run holds the lock: the usual way, which waits for it", wantInspects: 1, wantLocked: true,
			before: func(t *testing.T, _ *simnode.TestServer, n *inspectCounting, _ *delta.Store) {
				other := ops.LockOwner{RunID: "other", Host: "elsewhere", PID: 7, Command: "swdt kubernetes"}
				resp, err := n.Node.InspectLocked(context.Background(), ops.NodeLockRequest{Owner: other, StaleAfterMs: time.Hour.Milliseconds()}, nil)
				if err != nil || resp.Locked == nil || !resp.Locked.Acquired {
					t.Fatalf("the other run's lock: %+v, %v", resp.Locked, err)
				}
			}},
		{name: "an unfinished swap: the usual way repairs it first, the reading hook run again", wantInspects: 1, wantTransfer: hotswap.TransferPatch, hooks: [2]int{2, 0},
			before: func(t *testing.T, ts *simnode.TestServer, _ *inspectCounting, store *delta.Store) {
				dead := ops.LockOwner{RunID: "dead", Host: "elsewhere", PID: 7, Command: "swdt kubernetes"}
				j := ops.SwapJournal{Owner: dead, Started: "2025-01-01T00:00:00Z", Stopped: []string{}, Recovery: []ops.JournalRecovery{},
					Request: ops.ServiceSwapRequest{Owner: dead, Items: []ops.SwapItem{{Service: "kubelet", Destination: kubelet,
						Staged: kubelet + ".swdt-new-dead", Backup: kubelet + ".swdt-bak", SHA256: digest(v1)}}}}
				raw, err := json.Marshal(j)
				if err != nil {
					t.Fatal(err)
				}
				if err := ts.Node().WriteFile(ops.JournalPath, raw); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a patch larger than a swap request takes: sent as an upload, no inspect", wantTransfer: hotswap.TransferPatch,
			rebuild: func() []byte {
				b := bytes.Clone(v1)
				r := rand.New(rand.NewPCG(7, 7))
				for i := 2; i < hotswap.StreamLimit+64<<10; i++ {
					b[i] = byte(r.Uint32())
				}
				return b
			}()},
		{name: "the node's file changed since: the usual way, the file compressed (no copy of it to patch against)", wantInspects: 1, wantTransfer: hotswap.TransferCompressed,
			before: func(t *testing.T, ts *simnode.TestServer, _ *inspectCounting, store *delta.Store) {
				if err := ts.Node().Rename(kubelet, kubelet+".moved", false); err != nil {
					t.Fatal(err)
				}
				if err := ts.Node().WriteFile(kubelet, flip(v1)); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "the node's file is another build swdt keeps a copy of: the usual way, a patch against it", wantInspects: 1, wantTransfer: hotswap.TransferPatch,
			before: func(t *testing.T, ts *simnode.TestServer, _ *inspectCounting, store *delta.Store) {
				other := bytes.Clone(v1)
				copy(other[2<<20:], "another build")
				if err := ts.Node().Rename(kubelet, kubelet+".moved", false); err != nil {
					t.Fatal(err)
				}
				if err := ts.Node().WriteFile(kubelet, other); err != nil {
					t.Fatal(err)
				}
				if err := store.Put(digest(other), bytes.NewReader(other), int64(len(other))); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := &inspectCounting{countingLink: &countingLink{link: link{Node: connect(t, ts), rtt: 20 * time.Millisecond}}}
			store := &delta.Store{Dir: t.TempDir()}
			hashesPath := filepath.Join(t.TempDir(), "hashes.json")
			hashes := hashcache.Open(hashesPath)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			opts := hotswap.Options{Settle: 0, Hashes: hashes, Knowledge: hotswap.NewKnowledge(nil), LockWait: time.Millisecond,
				Transfer: hotswap.Transfer{Compress: delta.Mode{Auto: true}, Store: store}}
			first := []hotswap.Item{{Name: "kubelet", Service: "kubelet", Destination: kubelet, Source: sourceFile(t, "v1.exe", v1)}}
			if rep, err := hotswap.Run(ctx, n, first, opts); err != nil || rep.Results[0].Action != hotswap.ActionUpdated {
				t.Fatalf("first push: %+v, %v", rep, err)
			}
			if tc.newProcess {
				hashes.RememberInspect(*opts.Knowledge.Last())
				if err := hashes.Save(); err != nil {
					t.Fatal(err)
				}
				hashes = hashcache.Open(hashesPath)
				opts.Hashes, opts.Knowledge = hashes, hotswap.NewKnowledge(hashes.LastInspect())
			}
			if tc.before != nil {
				tc.before(t, ts, n, store)
			}
			n.inspects.Store(0)
			n.uploads.Store(0)
			rebuild := v2
			if tc.rebuild != nil {
				rebuild = tc.rebuild
			}
			var hooked [2]int
			hook := func(i int) func(context.Context) error {
				return func(context.Context) error {
					if got, _ := ts.Node().ReadFile(kubelet); !bytes.Equal(got, v1) {
						t.Error("a hook before the swap ran after it")
					}
					hooked[i]++
					return nil
				}
			}
			if tc.hooks[0] > 0 {
				opts.ReadBeforeSwap = hook(0)
			}
			if tc.hooks[1] > 0 {
				opts.BeforeSwap = hook(1)
			}
			items := []hotswap.Item{{Name: "kubelet", Service: "kubelet", Destination: kubelet, Source: sourceFile(t, "v2.exe", rebuild)}}
			ahead := hotswap.Prepare(ctx, items, opts)
			defer ahead.Close()
			opts.Ahead = ahead
			rep, err := hotswap.Run(ctx, n, items, opts)
			if got := n.inspects.Load(); got != tc.wantInspects {
				t.Errorf("%d lock+inspect ops, want %d", got, tc.wantInspects)
			}
			if hooked != tc.hooks {
				t.Errorf("the hooks (ReadBeforeSwap, BeforeSwap) ran %v times, want %v", hooked, tc.hooks)
			}
			if tc.wantLocked {
				var le *hotswap.LockedError
				if !errors.As(err, &le) || le.Holder.Owner.RunID != "other" {
					t.Fatalf("err = %v, want the node locked by the other run", err)
				}
				if got, _ := ts.Node().ReadFile(kubelet); !bytes.Equal(got, v1) {
					t.Error("the destination changed while another run held the lock")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Results[0]; r.Action != hotswap.ActionUpdated || r.Error != "" || r.Transfer != tc.wantTransfer {
				t.Fatalf("rebuild: %+v, want updated, transfer %s", r, tc.wantTransfer)
			}
			if got, err := ts.Node().ReadFile(kubelet); err != nil || !bytes.Equal(got, rebuild) {
				t.Fatalf("the destination does not hold the rebuild (%v)", err)
			}
			if ts.Node().Exists(ops.LockPath) || ts.Node().Exists(ops.JournalPath) {
				t.Error("the lock or a journal was left on the node")
			}
			if k := hashes.Known(kubelet); k == nil || k.SHA256 != digest(rebuild) {
				t.Errorf("hash cache holds %+v, want the rebuild's digest", k)
			}
			entries, err := ts.Node().List(`C:\k`)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.Contains(e.Name, ".swdt-zst") || strings.Contains(e.Name, ".swdt-new") {
					t.Errorf("left on the node: %s", e.Name)
				}
			}
		})
	}
}
