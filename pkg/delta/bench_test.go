package delta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
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
