package delta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDiffLarge makes the patch of a 128 MiB file with 28 bytes
// changed in the middle, the bench's large rebuild.
func BenchmarkDiffLarge(b *testing.B) {
	ref := make([]byte, 128<<20)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{1}), ref)
	sum := sha256.Sum256(ref)
	src := bytes.Clone(ref)
	copy(src[len(src)/2:], "a small change in the middle")
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Diff(context.Background(), io.Discard, bytes.NewReader(ref), int64(len(ref)), hex.EncodeToString(sum[:]), bytes.NewReader(src)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIndexDiffLarge makes that patch with the reference already
// indexed, as a warm store does (its saved index is loaded, not built):
// the patch's own work, the new file read and compared.
func BenchmarkIndexDiffLarge(b *testing.B) {
	ref := make([]byte, 128<<20)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{1}), ref)
	src := bytes.Clone(ref)
	copy(src[len(src)/2:], "a small change in the middle")
	benchIndexDiff(b, ref, src)
}

// BenchmarkIndexDiffRebuild makes the patch of a 48 MiB file changed as a
// program's rebuild changes it: a few bytes inserted every 64 KiB (code
// that moves) and a 4-byte word changed every 4 KiB (addresses that
// point past it), against an indexed reference.
func BenchmarkIndexDiffRebuild(b *testing.B) {
	ref := make([]byte, 48<<20)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{2}), ref)
	benchIndexDiff(b, ref, rebuilt(ref))
}

// rebuilt is ref changed as a program's rebuild changes it (above).
func rebuilt(ref []byte) []byte {
	var src []byte
	for off := 0; off < len(ref); off += 64 << 10 {
		chunk := bytes.Clone(ref[off:min(off+64<<10, len(ref))])
		for w := 100; w+4 <= len(chunk); w += 4 << 10 {
			chunk[w]++
		}
		src = append(append(src, "moved"...), chunk...)
	}
	return src
}

// BenchmarkApplyRebuild rebuilds that 48 MiB file from its patch, with
// the reference in a file as on a node: its thousands of short copies
// cost reads of the file.
func BenchmarkApplyRebuild(b *testing.B) {
	ref := make([]byte, 48<<20)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{2}), ref)
	var patch bytes.Buffer
	if _, err := Diff(context.Background(), &patch, bytes.NewReader(ref), int64(len(ref)), "", bytes.NewReader(rebuilt(ref))); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "ref")
	if err := os.WriteFile(path, ref, 0o600); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(int64(len(ref)))
	for b.Loop() {
		if _, err := Apply(io.Discard, f, int64(len(ref)), bytes.NewReader(patch.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

func benchIndexDiff(b *testing.B, ref, src []byte) {
	x, err := NewIndex(context.Background(), bytes.NewReader(ref), int64(len(ref)), "")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := x.Diff(context.Background(), io.Discard, bytes.NewReader(src)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyLarge rebuilds that file from its patch.
func BenchmarkApplyLarge(b *testing.B) {
	ref := make([]byte, 128<<20)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{1}), ref)
	src := bytes.Clone(ref)
	copy(src[len(src)/2:], "a small change in the middle")
	var patch bytes.Buffer
	if _, err := Diff(context.Background(), &patch, bytes.NewReader(ref), int64(len(ref)), "", bytes.NewReader(src)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Apply(io.Discard, bytes.NewReader(ref), int64(len(ref)), bytes.NewReader(patch.Bytes())); err != nil {
			b.Fatal(err)
		}
	}
}

// The index's hash of a window is the rolling hash segment computes at
// the same place, whatever the bytes: otherwise lookups miss.
func TestHashOfIsTheRollingHash(t *testing.T) {
	for _, seed := range []byte{1, 2, 3} {
		buf := make([]byte, 4096)
		_, _ = io.ReadFull(rand.NewChaCha8([32]byte{seed}), buf)
		if seed == 3 {
			clear(buf[1000:2000]) // runs of zeros too
		}
		v := hashOf(buf)
		for i := 1; i+window <= len(buf); i++ {
			v = (v-uint64(buf[i-1])*hashOut)*hashMul + uint64(buf[i+window-1])
			if want := hashOf(buf[i:]); v != want {
				t.Fatalf("seed %d, offset %d: rolled %x, hashOf %x", seed, i, v, want)
			}
		}
	}
}

// prefixLen finds the first difference wherever it is: in the first
// word, inside or at the edge of a chunk compared at once, in the tail
// after the last whole word, or nowhere.
func TestPrefixLen(t *testing.T) {
	base := make([]byte, 3*equalChunk+13)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{4}), base)
	for _, tc := range []struct {
		name   string
		differ int // index of the one differing byte, -1 none
		n      int // bytes compared
	}{
		{"no difference", -1, len(base)},
		{"first byte", 0, len(base)},
		{"inside the first word", 5, len(base)},
		{"inside the first chunk", equalChunk / 2, len(base)},
		{"last byte of a chunk", equalChunk - 1, len(base)},
		{"first byte of the second chunk", equalChunk, len(base)},
		{"third chunk", 2*equalChunk + 17, len(base)},
		{"tail after the last word", len(base) - 2, len(base)},
		{"shorter than a chunk", -1, equalChunk - 3},
		{"nothing", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			other := bytes.Clone(base)
			want := tc.n
			if tc.differ >= 0 {
				other[tc.differ]++
				want = tc.differ
			}
			if got := prefixLen(base[:tc.n], other); got != want {
				t.Errorf("prefixLen = %d, want %d", got, want)
			}
			if got := prefixLen(other, base[:tc.n]); got != want {
				t.Errorf("prefixLen, arguments swapped = %d, want %d", got, want)
			}
		})
	}
}
