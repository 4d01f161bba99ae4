package delta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// binaryLike is compressible, repetitive data with enough distinct
// content that matches are not trivial, like an executable's code.
func binaryLike(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	words := make([][]byte, 512)
	for i := range words {
		w := make([]byte, 4+r.IntN(28))
		for j := range w {
			w[j] = byte(r.IntN(256))
		}
		words[i] = w
	}
	var b bytes.Buffer
	for b.Len() < n {
		b.Write(words[r.IntN(len(words))])
		b.WriteByte(byte(r.IntN(256)))
	}
	return b.Bytes()[:n]
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestDiffApply(t *testing.T) {
	base := binaryLike(1, 6<<20)
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(base)) }
	tests := []struct {
		name    string
		ref     []byte
		new     []byte
		maxOut  int
		minCopy float64 // fraction of new taken from the reference
	}{
		{"identical", base, base, 2 << 10, 0.999},
		{"scattered 4-byte changes", base, edit(func(b []byte) []byte {
			for i := 1000; i < len(b); i += 4099 {
				copy(b[i:], "\x01\x02\x03\x04")
			}
			return b
		}), 64 << 10, 0.99},
		{"insertion shifts the rest", base, edit(func(b []byte) []byte {
			return append(b[:3<<20:3<<20], append([]byte("a new function's code"), base[3<<20:]...)...)
		}), 4 << 10, 0.999},
		{"deletion", base, edit(func(b []byte) []byte { return append(b[:1<<20:1<<20], base[1<<20+777:]...) }), 4 << 10, 0.999},
		{"unrelated", base, binaryLike(2, 3<<20), 3 << 20, 0},
		{"empty new file", base, nil, 64, 0},
		{"empty reference", nil, base[:1<<20], 1 << 20, 0},
		{"new file longer than a segment", base[:1<<20], append(bytes.Clone(base[:1<<20]), binaryLike(3, 9<<20)...), 9 << 20, 0.09},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var patch bytes.Buffer
			st, err := Diff(context.Background(), &patch, bytes.NewReader(tc.ref), int64(len(tc.ref)), digest(tc.ref), bytes.NewReader(tc.new))
			if err != nil {
				t.Fatalf("Diff: %v", err)
			}
			if st.Copied+st.Inserted != int64(len(tc.new)) {
				t.Errorf("copied %d + inserted %d != %d", st.Copied, st.Inserted, len(tc.new))
			}
			if patch.Len() > tc.maxOut {
				t.Errorf("patch is %d bytes, want at most %d", patch.Len(), tc.maxOut)
			}
			if len(tc.new) > 0 && float64(st.Copied)/float64(len(tc.new)) < tc.minCopy {
				t.Errorf("copied %d of %d bytes, want at least %.3f", st.Copied, len(tc.new), tc.minCopy)
			}
			var out bytes.Buffer
			n, err := Apply(&out, bytes.NewReader(tc.ref), int64(len(tc.ref)), &patch)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if n != int64(len(tc.new)) || !bytes.Equal(out.Bytes(), tc.new) {
				t.Fatalf("Apply made %d bytes that differ from the new file (%d)", n, len(tc.new))
			}
		})
	}
}

func TestApplyDetectsBadPatches(t *testing.T) {
	ref := binaryLike(4, 1<<20)
	nw := append(bytes.Clone(ref[:500<<10]), binaryLike(5, 600<<10)...)
	var patch bytes.Buffer
	if _, err := Diff(context.Background(), &patch, bytes.NewReader(ref), int64(len(ref)), "", bytes.NewReader(nw)); err != nil {
		t.Fatal(err)
	}
	good := patch.Bytes()
	tests := []struct {
		name  string
		patch []byte
		ref   []byte
		want  error
	}{
		{"truncated", good[:len(good)/2], ref, nil},
		{"corrupted", func() []byte { b := bytes.Clone(good); b[len(b)/2] ^= 0xff; return b }(), ref, nil},
		{"other reference size", good, ref[:len(ref)-1], ErrReferenceSize},
		{"not a patch", []byte("MZ\x90\x00 not zstd at all"), ref, nil},
		{"plain zstd, not a patch", func() []byte {
			var b bytes.Buffer
			if _, err := Compress(context.Background(), &b, bytes.NewReader(nw), func() Level { return LevelFastest }); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}(), ref, ErrPatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Apply(&out, bytes.NewReader(tc.ref), int64(len(tc.ref)), bytes.NewReader(tc.patch))
			if err == nil {
				if bytes.Equal(out.Bytes(), nw) {
					t.Fatal("a damaged patch made the right file")
				}
				// A damage Apply cannot see is left to the SHA-256 check.
				if digest(out.Bytes()) == digest(nw) {
					t.Fatal("digest matches")
				}
				return
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("Apply: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDiffRefusesTheWrongReference(t *testing.T) {
	ref := binaryLike(6, 100<<10)
	var patch bytes.Buffer
	_, err := Diff(context.Background(), &patch, bytes.NewReader(ref), int64(len(ref)), digest([]byte("other")), bytes.NewReader(ref))
	if !errors.Is(err, ErrReference) {
		t.Fatalf("Diff: %v, want ErrReference", err)
	}
	if patch.Len() != 0 {
		t.Fatalf("wrote %d bytes before finding out", patch.Len())
	}
}

func TestCompressRoundTrip(t *testing.T) {
	data := binaryLike(8, 9<<20+12345)
	tests := []struct {
		name   string
		data   []byte
		levels []Level // per chunk, the last repeats
		stored int64
	}{
		{"off", data, []Level{LevelOff}, int64(len(data))},
		{"fastest", data, []Level{LevelFastest}, 0},
		{"default", data[:1<<20], []Level{LevelDefault}, 0},
		{"better", data[:1<<20], []Level{LevelBetter}, 0},
		{"level changes between frames", data, []Level{LevelFastest, LevelOff, LevelBetter}, chunkSize},
		{"empty", nil, []Level{LevelFastest}, 0},
		{"empty stored", nil, []Level{LevelOff}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i := 0
			choose := func() Level {
				l := tc.levels[min(i, len(tc.levels)-1)]
				i++
				return l
			}
			var enc bytes.Buffer
			st, err := Compress(context.Background(), &enc, bytes.NewReader(tc.data), choose)
			if err != nil {
				t.Fatal(err)
			}
			if st.In != int64(len(tc.data)) || st.Out != int64(enc.Len()) || st.Stored != tc.stored {
				t.Errorf("stats %+v for %d bytes in, %d out, want %d stored", st, len(tc.data), enc.Len(), tc.stored)
			}
			if tc.stored == 0 && len(tc.data) > 0 && st.Out > st.In*3/4 {
				t.Errorf("compressed %d to %d", st.In, st.Out)
			}
			var out bytes.Buffer
			if _, err := Decompress(&out, &enc); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), tc.data) {
				t.Fatal("round trip differs")
			}
		})
	}
}

func TestParseModeAndAutoLevel(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Mode
		bad  bool
	}{
		{"auto", Mode{Auto: true}, false},
		{"off", Mode{}, false},
		{"3", Mode{Level: LevelBetter}, false},
		{"0", Mode{}, true},
		{"9", Mode{}, true},
		{"fast", Mode{}, true},
	} {
		got, err := ParseMode(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseMode(%q) = %v, %v", tc.in, got, err)
		}
	}
	for _, tc := range []struct {
		rate float64
		ok   bool
		want Level
	}{
		{0, false, LevelFastest},
		{200 << 20, true, LevelOff},
		{12 << 20, true, LevelDefault},
		{25 << 20, true, LevelFastest},
		{1 << 20, true, LevelBetter},
	} {
		if got := AutoLevel(tc.rate, tc.ok); got != tc.want {
			t.Errorf("AutoLevel(%v, %v) = %d, want %d", tc.rate, tc.ok, got, tc.want)
		}
	}
}

func TestStore(t *testing.T) {
	dir := t.TempDir()
	s := &Store{Dir: dir, MaxBytes: 300}
	blobs := [][]byte{bytes.Repeat([]byte("a"), 100), bytes.Repeat([]byte("b"), 100), bytes.Repeat([]byte("c"), 100)}
	for i, b := range blobs {
		if err := s.Put(digest(b), bytes.NewReader(b), int64(len(b))); err != nil {
			t.Fatal(err)
		}
		// Distinct use times even on coarse file systems.
		old := time.Now().Add(time.Duration(i-10) * time.Minute)
		_ = os.Chtimes(filepath.Join(dir, digest(b)), old, old)
	}
	f, size, err := s.Open(digest(blobs[0])) // now the most recently used
	if err != nil || size != 100 {
		t.Fatalf("Open: %v, %d", err, size)
	}
	f.Close()
	d := bytes.Repeat([]byte("d"), 100)
	if err := s.Put(digest(d), bytes.NewReader(d), 100); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		blob []byte
		kept bool
	}{{blobs[0], true}, {blobs[1], false}, {blobs[2], true}, {d, true}} {
		_, _, err := s.Open(digest(tc.blob))
		if kept := err == nil; kept != tc.kept {
			t.Errorf("copy %q kept=%v, want %v (%v)", tc.blob[:1], kept, tc.kept, err)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open: %v", err)
		}
	}
	if _, _, err := s.Open("../../etc/passwd"); err == nil {
		t.Error("Open accepted a path")
	}
}
