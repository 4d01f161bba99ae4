package hotswap

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/source"
)

// fanOut swaps src in on nodes that each hold (and whose hash caches
// record) the file whose SHA-256 is old, all at once as a fleet run
// does, sharing store; it returns each node's report.
func fanOut(ctx context.Context, nodes int, store *delta.Store, old string, src *source.File) ([]*Report, []error) {
	const dest = `C:\k\kubelet.exe`
	reports, errs := make([]*Report, nodes), make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			f := &fakeNode{files: map[string]string{dest: old}, services: seedServices(nil),
				caps: node.Capabilities{Encoding: true, LinkRTT: true}, rtt: 20 * time.Millisecond}
			hashes := &mapHashes{m: map[string]ops.FileInfo{dest: {Exists: true, Size: src.Size, SHA256: old}}}
			items := []Item{{Name: "kubelet", Service: "kubelet", Destination: dest, Source: src}}
			opts := Options{Hashes: hashes, Transfer: Transfer{Compress: delta.Mode{Auto: true}, Store: store, ExpectedRTT: 20 * time.Millisecond}}
			opts.Ahead = Prepare(ctx, items, opts)
			defer opts.Ahead.Close()
			reports[i], errs[i] = Run(ctx, f, items, opts)
		})
	}
	wg.Wait()
	return reports, errs
}

// rebuild writes a binary of size bytes and its rebuild (a change in the
// middle) to dir: the first as its digest, the second as a source.
func rebuild(tb testing.TB, dir string, size int) (old string, next *source.File) {
	tb.Helper()
	b := make([]byte, size)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{4}), b)
	old = sha(b)
	if err := os.WriteFile(filepath.Join(dir, "old.exe"), b, 0o644); err != nil {
		tb.Fatal(err)
	}
	copy(b[size/2:], "a rebuilt function")
	p := filepath.Join(dir, "next.exe")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	return old, &source.File{Ref: p, Path: p, Size: int64(size), SHA256: sha(b)}
}

// putOld puts the old build (written by rebuild in dir) into store.
func putOld(tb testing.TB, store *delta.Store, dir, old string) {
	tb.Helper()
	f, err := os.Open(filepath.Join(dir, "old.exe"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		tb.Fatal(err)
	}
	if err := store.Put(old, f, fi.Size()); err != nil {
		tb.Fatal(err)
	}
}

// A run that patches one file to many nodes makes one index and one
// patch, and keeps one copy of the new build, however many nodes there
// are: every node gets the patch.
func TestNodesShareOnePatch(t *testing.T) {
	t.Parallel()
	for _, nodes := range []int{1, 4, 10} {
		t.Run(strconv.Itoa(nodes)+" nodes", func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			old, next := rebuild(t, dir, 4<<20)
			store := &delta.Store{Dir: filepath.Join(dir, "store")}
			putOld(t, store, dir, old)
			before := store.Stats()
			reports, errs := fanOut(context.Background(), nodes, store, old, next)
			for i := range nodes {
				if errs[i] != nil {
					t.Fatalf("node %d: %v", i, errs[i])
				}
				if r := reports[i].Results[0]; r.Action != ActionUpdated || r.Transfer != TransferPatch {
					t.Errorf("node %d: %s by %s, want updated by patch", i, r.Action, r.Transfer)
				}
			}
			st := store.Stats()
			st.Copies -= before.Copies
			if st.Patches != 1 || st.IndexesBuilt+st.IndexesLoaded != 2 || st.Copies != 1 {
				t.Errorf("store did %+v for %d nodes; want one patch, one index of the old build and one of the new, one copy", st, nodes)
			}
		})
	}
}

// peakRSS is the process's peak resident set since resetPeak, in MiB.
func peakRSS(tb testing.TB) float64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skip("no /proc/self/status:", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb / 1024
		}
	}
	tb.Skip("no VmHWM")
	return 0
}

// resetPeak frees what the heap does not use and resets the peak
// resident set (Linux: clear_refs 5).
func resetPeak(tb testing.TB) {
	tb.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Skip("cannot reset the peak RSS:", err)
	}
}

// BenchmarkFanOutRSS measures swdt's side of a run that patches one
// 64 MB file to 1, 4 and 10 nodes (fake nodes that take what they are
// sent: the process is swdt alone), and of a cold store (no copy of the
// node's file: it is sent compressed, and its copy and index kept) against
// a warm one; it reports the process's peak RSS during the run
// (peak-MiB; Linux). Each round is a new Store on the same directory, as
// a new process is.
func BenchmarkFanOutRSS(b *testing.B) {
	dir := b.TempDir()
	old, next := rebuild(b, dir, 64<<20)
	warm := filepath.Join(dir, "warm")
	putOld(b, &delta.Store{Dir: warm}, dir, old)
	if err := (&delta.Store{Dir: warm}).SaveIndex(context.Background(), old); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		nodes int
		cold  bool
	}{{"warm 1 node", 1, false}, {"warm 4 nodes", 4, false}, {"warm 10 nodes", 10, false}, {"cold 1 node", 1, true}} {
		b.Run(tc.name, func(b *testing.B) {
			var peak float64
			i := 0
			for b.Loop() {
				sdir := warm
				if tc.cold {
					sdir = filepath.Join(dir, fmt.Sprintf("cold%d", i))
				} else {
					// The new build's copy and index, kept by the last
					// round, go: each round keeps them again.
					_ = os.Remove(filepath.Join(warm, next.SHA256))
					_ = os.Remove(filepath.Join(warm, next.SHA256+".idx"))
				}
				i++
				b.StopTimer()
				resetPeak(b)
				b.StartTimer()
				_, errs := fanOut(context.Background(), tc.nodes, &delta.Store{Dir: sdir}, old, next)
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				peak = max(peak, peakRSS(b))
			}
			b.ReportMetric(peak, "peak-MiB")
		})
	}
}
