package hotswap_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pkg/sftp"

	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/hashcache"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/source"
)

// benchSize is the rebuild of issue 37: a 256 MB binary with a small
// change. Run with TMPDIR on a tmpfs to measure without a disk.
const benchSize = 256 << 20

// rebuildPair writes a binary and its rebuild (28 bytes changed in the
// middle) to dir, and returns them as sources.
func rebuildPair(tb testing.TB, dir string, size int) (v1, v2 *source.File) {
	tb.Helper()
	b := make([]byte, size)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{37}), b)
	v1 = benchSource(tb, filepath.Join(dir, "v1.exe"), b)
	copy(b[size/2:], "a small change in the middle")
	v2 = benchSource(tb, filepath.Join(dir, "v2.exe"), b)
	return v1, v2
}

func benchSource(tb testing.TB, p string, b []byte) *source.File {
	tb.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return &source.File{Ref: p, Path: p, Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:])}
}

// BenchmarkRebuildPatch256 swaps a 256 MB rebuild in as a patch on a
// simnode (the link reported as 20 ms, so that it is encoded), with the
// store and the hash cache warm as on a developer's second run; each
// round swaps the other of the two builds. BenchmarkSFTPPut256 is the
// same file put with SFTP (concurrent writes) to the same kind of node.
func BenchmarkRebuildPatch256(b *testing.B) {
	ts := simnode.StartTest(b)
	dir := b.TempDir()
	v1, v2 := rebuildPair(b, dir, benchSize)
	n := &link{Node: connect(b, ts), rtt: 20 * time.Millisecond}
	store := &delta.Store{Dir: filepath.Join(dir, "store")}
	hashes := hashcache.Open(filepath.Join(dir, "hashes.json"))
	opts := hotswap.Options{Settle: 0, Hashes: hashes,
		Transfer: hotswap.Transfer{Compress: delta.Mode{Auto: true}, Store: store}}
	ctx := context.Background()
	run := func(src *source.File) {
		items := []hotswap.Item{{Name: "kubelet", Service: "kubelet", Destination: kubelet, Source: src}}
		o := opts
		o.Ahead = hotswap.Prepare(ctx, items, o)
		defer o.Ahead.Close()
		rep, err := hotswap.Run(ctx, n, items, o)
		if err != nil || rep.Results[0].Action != hotswap.ActionUpdated {
			b.Fatalf("%+v, %v", rep, err)
		}
	}
	run(v1)
	run(v2) // the store holds both, with their indexes
	b.SetBytes(benchSize)
	srcs := []*source.File{v1, v2}
	i := 0
	for b.Loop() {
		run(srcs[i%2])
		i++
	}
}

func BenchmarkSFTPPut256(b *testing.B) {
	ts := simnode.StartTest(b)
	dir := b.TempDir()
	v1, _ := rebuildPair(b, dir, benchSize)
	c, err := ts.Dial(ts.User())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	sc, err := sftp.NewClient(c, sftp.UseConcurrentWrites(true), sftp.MaxConcurrentRequestsPerFile(64))
	if err != nil {
		b.Fatal(err)
	}
	defer sc.Close()
	b.SetBytes(benchSize)
	for b.Loop() {
		f, err := os.Open(v1.Path)
		if err != nil {
			b.Fatal(err)
		}
		dst, err := sc.Create("/C:/k/kubelet.put")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := dst.ReadFrom(f); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if err := dst.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
