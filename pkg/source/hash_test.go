package source

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// hashFile's digest and length are the file's whatever its size against
// the blocks it reads at a time.
func TestHashFile(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, hashBlock - 1, hashBlock, hashBlock + 1, 2*hashBlock + 5} {
		data := make([]byte, size)
		_, _ = io.ReadFull(rand.NewChaCha8([32]byte{byte(size)}), data)
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		got, n, err := hashFile(p)
		if err != nil || got != hex.EncodeToString(sum[:]) || n != int64(size) {
			t.Errorf("size %d: hashFile = %s, %d, %v; want %x, %d", size, got, n, err, sum, size)
		}
	}
	if _, _, err := hashFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("hashFile of a missing file: no error")
	}
}

// BenchmarkHashFile hashes a 48 MiB file, a Windows build's size.
func BenchmarkHashFile(b *testing.B) {
	data := make([]byte, 48<<20)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{1}), data)
	p := filepath.Join(b.TempDir(), "build.exe")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := hashFile(p); err != nil {
			b.Fatal(err)
		}
	}
}
