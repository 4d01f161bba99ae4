package delta

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
		{"halves swapped, copies beyond the zstd window", base, append(bytes.Clone(base[3<<20:]), base[:3<<20]...), 4 << 10, 0.999},
		{"same content repeated", base[:1<<20], bytes.Repeat(base[:1<<20], 3), 4 << 10, 0.999},
		{"a rebuild: code moved, addresses changed", base, rebuilt(base), 64 << 10, 0.99},
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
		{"other reference of the same size", good, binaryLike(9, len(ref)), nil},
		{"empty", nil, ref, ErrPatch},
		{"only the first byte", good[:1], ref, nil},
		{"cut before its last byte", good[:len(good)-1], ref, nil},
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

// failingAt is a reference whose reads fail from an offset on.
type failingAt struct {
	r    io.ReaderAt
	from int64
}

var errDisk = errors.New("the disk failed")

func (f failingAt) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.from {
		n, _ := f.r.ReadAt(p[:max(0, f.from-off)], off)
		return n, errDisk
	}
	return f.r.ReadAt(p, off)
}

// A reference that cannot be read fails the rebuild with the read's error,
// whether the copy is a short one (read through the page cache) or a long
// one; it never ends short and quiet.
func TestApplyReferenceReadFails(t *testing.T) {
	ref := binaryLike(10, 2<<20)
	tests := []struct {
		name string
		new  []byte
	}{
		{"short copies", rebuilt(ref)},
		{"long copies", append(bytes.Clone(ref[1<<20:]), ref[:1<<20]...)},
	}
	for _, tc := range tests {
		for _, from := range []int64{0, 1 << 20} {
			t.Run(fmt.Sprintf("%s, reads fail from %d", tc.name, from), func(t *testing.T) {
				var patch bytes.Buffer
				if _, err := Diff(context.Background(), &patch, bytes.NewReader(ref), int64(len(ref)), "", bytes.NewReader(tc.new)); err != nil {
					t.Fatal(err)
				}
				n, err := Apply(io.Discard, failingAt{bytes.NewReader(ref), from}, int64(len(ref)), &patch)
				if !errors.Is(err, errDisk) {
					t.Fatalf("Apply made %d of %d bytes and returned %v, want the read's error", n, len(tc.new), err)
				}
			})
		}
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
		f, _, err := s.Open(digest(tc.blob))
		if err == nil {
			f.Close()
		}
		if kept := err == nil; kept != tc.kept {
			t.Errorf("copy %q kept=%v, want %v (%v)", tc.blob[:1], kept, tc.kept, err)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Open: %v", err)
		}
	}
	if f, _, err := s.Open("../../etc/passwd"); err == nil {
		f.Close()
		t.Error("Open accepted a path")
	}
}

// TestApplyDetectsDamageAnywhere cuts and corrupts a patch at many
// places. Apply must fail: a cut loses the end mark, and zstd's checksum
// covers the content. The one exception is damage that leaves the
// content as it was (a frame header's window size): Apply then makes the
// new file exactly, which the node's SHA-256 check accepts rightly.
func TestApplyDetectsDamageAnywhere(t *testing.T) {
	ref := binaryLike(10, 2<<20)
	nw := append(bytes.Clone(ref[:1<<20]), append([]byte("a rebuilt function"), ref[1<<20:]...)...)
	var patch bytes.Buffer
	if _, err := Diff(context.Background(), &patch, bytes.NewReader(ref), int64(len(ref)), digest(ref), bytes.NewReader(nw)); err != nil {
		t.Fatal(err)
	}
	good := patch.Bytes()
	tests := []struct {
		name   string
		damage func(b []byte, at int) []byte
	}{
		{"truncated", func(b []byte, at int) []byte { return b[:at] }},
		{"byte flipped", func(b []byte, at int) []byte { b = bytes.Clone(b); b[at] ^= 0x55; return b }},
		{"bytes zeroed", func(b []byte, at int) []byte {
			b = bytes.Clone(b)
			clear(b[at:min(at+16, len(b))])
			return b
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for at := range len(good) {
				bad := tc.damage(good, at)
				if bytes.Equal(bad, good) {
					continue // zeroing bytes that were zero
				}
				var out bytes.Buffer
				_, err := Apply(&out, bytes.NewReader(ref), int64(len(ref)), bytes.NewReader(bad))
				if err == nil && !bytes.Equal(out.Bytes(), nw) {
					t.Errorf("damaged at %d of %d: Apply made %d other bytes without an error", at, len(good), out.Len())
				}
				if err == nil && tc.name == "truncated" {
					t.Errorf("cut at %d of %d: no error", at, len(good))
				}
			}
		})
	}
}

// TestDecompressDetectsDamage: a damaged compressed upload is an error
// (zstd's checksum), before the node's SHA-256 check.
func TestDecompressDetectsDamage(t *testing.T) {
	data := binaryLike(11, 5<<20)
	var enc bytes.Buffer
	if _, err := Compress(context.Background(), &enc, bytes.NewReader(data), func() Level { return LevelFastest }); err != nil {
		t.Fatal(err)
	}
	good := enc.Bytes()
	tests := []struct {
		name string
		in   []byte
	}{
		{"truncated in the first frame", good[:len(good)/4]},
		{"truncated in the last frame", good[:len(good)-3]},
		{"byte flipped", func() []byte { b := bytes.Clone(good); b[len(b)/2] ^= 0x01; return b }()},
		{"not zstd", []byte("MZ\x90\x00 an executable")},
		{"window larger than allowed", []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, 0xF8, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if n, err := Decompress(&out, bytes.NewReader(tc.in)); err == nil {
				t.Fatalf("Decompress made %d bytes without an error", n)
			}
		})
	}
}

func TestCompressStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Compress(ctx, io.Discard, bytes.NewReader(binaryLike(12, 1<<20)), func() Level { return LevelFastest })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Compress: %v, want context.Canceled", err)
	}
	ref := binaryLike(13, 1<<20)
	_, err = Diff(ctx, io.Discard, bytes.NewReader(ref), int64(len(ref)), "", bytes.NewReader(ref))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Diff: %v, want context.Canceled", err)
	}
}

func TestModeString(t *testing.T) {
	for _, in := range []string{"auto", "off", "1", "2", "3", "4"} {
		m, err := ParseMode(in)
		if err != nil {
			t.Fatal(err)
		}
		if m.String() != in {
			t.Errorf("ParseMode(%q).String() = %q", in, m.String())
		}
		if !m.Auto && m.Chooser(nil)() != m.Level {
			t.Errorf("%s: Chooser gives %d", in, m.Chooser(nil)())
		}
	}
}

// TestMeter checks when the link rate becomes known: only after the
// read-ahead plus 1 MiB went through.
func TestMeter(t *testing.T) {
	tests := []struct {
		read   int64
		wantOK bool
	}{
		{0, false},
		{inFlight, false},
		{inFlight + 1<<20 - 1, false},
		{inFlight + 2<<20, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.read), func(t *testing.T) {
			m := NewMeter(io.LimitReader(zeros{}, tc.read))
			if _, err := io.CopyBuffer(io.Discard, m, make([]byte, 32<<10)); err != nil {
				t.Fatal(err)
			}
			rate, ok := m.LinkRate()
			if ok != tc.wantOK || (ok && rate <= 0) {
				t.Fatalf("LinkRate after %d bytes = %v, %v; want ok %v", tc.read, rate, ok, tc.wantOK)
			}
		})
	}
}

// TestMeterRate checks the rate a Meter measures on a link that moves
// 12.5 MB/s (100 Mbit/s), on a clock the upload advances: the link takes
// the time of each 32 KiB the uploader passes on, and every 4 MiB the
// uploader waits for the encoder, while the link drains what is in
// flight.
func TestMeterRate(t *testing.T) {
	const link = 12.5e6
	drain := time.Duration(float64(inFlight) / link * float64(time.Second))
	tests := []struct {
		name string
		wait time.Duration // for the encoder, every 4 MiB
	}{
		{name: "link-bound"},
		{name: "short waits, while the link drains what is in flight", wait: drain / 4},
		{name: "long waits, that leave the link idle", wait: 10 * drain},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(0, 0)
			var read int64
			var credit time.Duration // link time spent while the uploader waited
			m := NewMeter(io.LimitReader(readFunc(func(p []byte) (int, error) {
				if read > 0 && read%(4<<20) == 0 {
					now = now.Add(tc.wait)
					credit = min(tc.wait, drain)
				}
				read += int64(len(p))
				return len(p), nil
			}), 24<<20))
			m.now = func() time.Time { return now }
			wire := writeFunc(func(p []byte) (int, error) {
				d := time.Duration(float64(len(p)) / link * float64(time.Second))
				used := min(credit, d)
				credit -= used
				now = now.Add(d - used)
				return len(p), nil
			})
			if _, err := io.CopyBuffer(wire, m, make([]byte, 32<<10)); err != nil {
				t.Fatal(err)
			}
			rate, ok := m.LinkRate()
			if !ok || rate < 11.5e6 || rate > 13.5e6 {
				t.Errorf("LinkRate = %.1f MB/s, %v; want 12.5 MB/s within 1", rate/1e6, ok)
			}
		})
	}
}

type readFunc func(p []byte) (int, error)

func (f readFunc) Read(p []byte) (int, error) { return f(p) }

type writeFunc func(p []byte) (int, error)

func (f writeFunc) Write(p []byte) (int, error) { return f(p) }

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestStorePrunesToItsBound puts copies of varied sizes one after the
// other: after each Put the copies fit in MaxBytes, the one just put is
// always kept (even alone over the bound), and the least recently used
// go first.
func TestStorePrunesToItsBound(t *testing.T) {
	tests := []struct {
		name  string
		max   int64
		sizes []int
		// kept are the indexes of sizes still there at the end.
		kept []int
	}{
		{"all fit", 1000, []int{100, 200, 300}, []int{0, 1, 2}},
		{"oldest go first", 450, []int{100, 200, 150, 100}, []int{1, 2, 3}},
		{"a large copy evicts several", 500, []int{100, 100, 100, 100, 400}, []int{3, 4}},
		{"one copy over the bound is kept alone", 100, []int{50, 50, 300}, []int{2}},
		{"exactly the bound", 300, []int{100, 100, 100}, []int{0, 1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := &Store{Dir: dir, MaxBytes: tc.max}
			var blobs [][]byte
			for i, n := range tc.sizes {
				b := bytes.Repeat([]byte{byte('a' + i)}, n)
				blobs = append(blobs, b)
				if err := s.Put(digest(b), bytes.NewReader(b), int64(n)); err != nil {
					t.Fatal(err)
				}
				// Distinct use times, in order, even on coarse file systems.
				at := time.Now().Add(time.Duration(i-100) * time.Minute)
				if err := os.Chtimes(filepath.Join(dir, digest(b)), at, at); err != nil {
					t.Fatal(err)
				}
				if total, kept := storeSize(t, dir); total > tc.max && kept > 1 {
					t.Fatalf("after Put %d: %d bytes in %d copies, bound %d", i, total, kept, tc.max)
				}
				if _, err := os.Stat(filepath.Join(dir, digest(b))); err != nil {
					t.Fatalf("the copy just put is gone: %v", err)
				}
			}
			for i, b := range blobs {
				_, err := os.Stat(filepath.Join(dir, digest(b)))
				if want := slices.Contains(tc.kept, i); (err == nil) != want {
					t.Errorf("copy %d kept=%v, want %v", i, err == nil, want)
				}
			}
		})
	}
}

func storeSize(t *testing.T, dir string) (total int64, n int) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
		n++
	}
	return total, n
}

func TestStorePut(t *testing.T) {
	tests := []struct {
		name    string
		digest  string
		content string
		wantErr bool
	}{
		{"a digest", digest([]byte("x")), "x", false},
		{"the same again refreshes it", digest([]byte("x")), "x", false},
		{"upper case is not a store name", strings.ToUpper(digest([]byte("y"))), "y", true},
		{"a path", "../" + digest([]byte("z"))[3:], "z", true},
		{"empty", "", "", true},
	}
	s := &Store{Dir: filepath.Join(t.TempDir(), "made on first Put")}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Put(tc.digest, strings.NewReader(tc.content), int64(len(tc.content)))
			if (err != nil) != tc.wantErr {
				t.Fatalf("Put: %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			f, size, err := s.Open(tc.digest)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := io.ReadAll(f)
			if err != nil || string(got) != tc.content || size != int64(len(tc.content)) {
				t.Fatalf("Open: %q, %d, %v", got, size, err)
			}
		})
	}
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".put-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestModeEncodes(t *testing.T) {
	tests := []struct {
		mode Mode
		rtt  time.Duration
		ok   bool
		want bool
	}{
		{Mode{Auto: true}, 0, false, true},
		{Mode{Auto: true}, 200 * time.Microsecond, true, false},
		{Mode{Auto: true}, 4 * time.Millisecond, true, false},
		{Mode{Auto: true}, 5 * time.Millisecond, true, true},
		{Mode{Auto: true}, 60 * time.Millisecond, true, true},
		{Mode{Level: LevelFastest}, 200 * time.Microsecond, true, true},
		{Mode{Level: LevelOff}, 60 * time.Millisecond, true, false},
	}
	for _, tc := range tests {
		if got := tc.mode.Encodes(tc.rtt, tc.ok); got != tc.want {
			t.Errorf("%s.Encodes(%s, %v) = %v, want %v", tc.mode, tc.rtt, tc.ok, got, tc.want)
		}
	}
}
