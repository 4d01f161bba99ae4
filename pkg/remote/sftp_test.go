package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/ops"
)

// pattern is an io.ReaderAt of size deterministic pseudo-random bytes,
// computed on demand so that a huge upload needs no huge buffer.
type pattern struct{ size int64 }

func (p pattern) ReadAt(b []byte, off int64) (int, error) {
	if off >= p.size {
		return 0, io.EOF
	}
	n := len(b)
	if rem := p.size - off; int64(n) > rem {
		n = int(rem)
	}
	var word [8]byte
	wordIdx := int64(-1)
	for i := 0; i < n; i++ {
		pos := off + int64(i)
		if w := pos >> 3; w != wordIdx {
			wordIdx = w
			binary.LittleEndian.PutUint64(word[:], splitmix(uint64(w)))
		}
		b[i] = word[pos&7]
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (p pattern) sum(t testing.TB) [32]byte {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(p, 0, p.size)); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

func fileSum(t testing.TB, path string) [32]byte {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

func TestUploadLargeFileStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("256 MB upload skipped with -short")
	}
	const size = 256 << 20
	s := sshdtest.Start(t)
	c := dial(t, sshdConfig(t, s))
	src := pattern{size: size}
	dst := filepath.Join(s.Dir, "big.bin")

	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	var last int64
	err := c.Upload(t.Context(), src, size, dst, func(sent int64) { last = sent })
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("Upload: %v", err)
	}
	if last != size {
		t.Errorf("last progress = %d, want %d", last, size)
	}
	growth := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("heap in use: base %d MB, peak %d MB", base.HeapInuse>>20, peak.Load()>>20)
	if growth > 64<<20 {
		t.Errorf("heap grew by %d MB while sending %d MB: the upload is buffered", growth>>20, size>>20)
	}
	if got, want := fileSum(t, dst), src.sum(t); got != want {
		t.Fatalf("server file SHA-256 %x, want %x", got, want)
	}
	if _, err := os.Stat(ops.PartPath(dst)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("staged file left behind: %v", err)
	}
}

func TestFileOps(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, sshdConfig(t, s))
	ctx := t.Context()
	dir := filepath.Join(s.Dir, "k", "sub")
	if err := c.MkdirAll(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if err := c.MkdirAll(ctx, dir); err != nil {
		t.Fatalf("MkdirAll on an existing dir: %v", err)
	}
	dst := filepath.Join(dir, "kubelet.exe")
	if _, err := c.Stat(ctx, dst); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat of a missing file: want fs.ErrNotExist, got %v", err)
	}

	// Upload replaces an existing file.
	os.WriteFile(dst, []byte("old contents that are longer"), 0o644)
	src := pattern{size: 3<<20 + 17}
	if err := c.Upload(ctx, src, src.size, dst, nil); err != nil {
		t.Fatal(err)
	}
	fi, err := c.Stat(ctx, dst)
	if err != nil || fi.Size() != src.size {
		t.Fatalf("Stat = %v, %v", fi, err)
	}
	var buf bytes.Buffer
	if err := c.Download(ctx, dst, &buf); err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(buf.Bytes()) != src.sum(t) {
		t.Fatal("downloaded bytes differ")
	}

	// Empty upload.
	empty := filepath.Join(dir, "empty")
	if err := c.Upload(ctx, bytes.NewReader(nil), 0, empty, nil); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Fatalf("empty upload: %v %v", fi, err)
	}

	// Rename replaces the target; Remove deletes.
	moved := filepath.Join(dir, "kubelet.exe.swdt-bak")
	os.WriteFile(moved, []byte("stale"), 0o644)
	if err := c.Rename(ctx, dst, moved); err != nil {
		t.Fatal(err)
	}
	if fileSum(t, moved) != src.sum(t) {
		t.Fatal("renamed file has the wrong contents")
	}
	if err := c.Remove(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(ctx, moved); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Remove of a missing file: want fs.ErrNotExist, got %v", err)
	}
	if err := c.Rename(ctx, moved, dst); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Rename of a missing file: want fs.ErrNotExist, got %v", err)
	}

	// A source shorter than the declared size fails and leaves nothing.
	short := filepath.Join(dir, "short")
	if err := c.Upload(ctx, bytes.NewReader([]byte("abc")), 10, short, nil); err == nil {
		t.Fatal("short source uploaded")
	}
	for _, p := range []string{short, ops.PartPath(short)} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists after a failed upload", p)
		}
	}

	// Cancelled upload: returns ctx error, destination untouched.
	cctx, cancel := context.WithCancel(ctx)
	big := pattern{size: 64 << 20}
	err = c.Upload(cctx, big, big.size, short, func(sent int64) {
		if sent > 1<<20 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled upload: want context.Canceled, got %v", err)
	}
	if _, err := os.Stat(short); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("cancelled upload reached its destination")
	}
	if _, err := c.Stat(ctx, dir); err != nil {
		t.Fatalf("client unusable after a cancelled upload: %v", err)
	}
}

// TestUploadSurvivesDroppedConnection: the link drops mid-upload once; the
// upload reconnects and restarts its staged file.
func TestUploadSurvivesDroppedConnection(t *testing.T) {
	s := sshdtest.Start(t)
	p := sshdtest.StartProxy(t, s.Addr, 6<<20, 1)
	cfg := sshdConfig(t, s)
	cfg.Host = p.Addr
	c := dial(t, cfg)
	src := pattern{size: 24 << 20}
	dst := filepath.Join(s.Dir, "kubelet.exe")
	restarted := false
	var prev int64
	err := c.Upload(t.Context(), src, src.size, dst, func(sent int64) {
		if sent < prev {
			restarted = true
		}
		prev = sent
	})
	if err != nil {
		t.Fatalf("Upload: %v", err)
	}
	if p.Connections() != 2 || !restarted {
		t.Errorf("connections = %d, restarted = %v; want a reconnect and a restart", p.Connections(), restarted)
	}
	if fileSum(t, dst) != src.sum(t) {
		t.Fatal("uploaded file differs")
	}
}

// TestCutUploadLeavesNoFile: when every try is cut, the destination keeps
// its old contents (or stays absent), and a later retry completes.
func TestCutUploadLeavesNoFile(t *testing.T) {
	s := sshdtest.Start(t)
	p := sshdtest.StartProxy(t, s.Addr, 4<<20, 2)
	cfg := sshdConfig(t, s)
	cfg.Host = p.Addr
	c := dial(t, cfg)
	src := pattern{size: 16 << 20}
	fresh := filepath.Join(s.Dir, "fresh.exe")

	err := c.Upload(t.Context(), src, src.size, fresh, nil)
	var re *RetriesExhaustedError
	if !errors.As(err, &re) || !errors.Is(err, ErrConnectionLost) || re.Attempts != 2 {
		t.Fatalf("want retries exhausted after 2 attempts on a lost connection, got %v", err)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a cut upload left a file at the destination: %v", err)
	}

	if err := c.Upload(t.Context(), src, src.size, fresh, nil); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if fileSum(t, fresh) != src.sum(t) {
		t.Fatal("uploaded file differs")
	}
}

// Download and DownloadLean give every byte once, across a connection
// that drops mid-file.
func TestDownloadResumesAfterDrop(t *testing.T) {
	s := sshdtest.Start(t)
	src := pattern{size: 16 << 20}
	path := filepath.Join(s.Dir, "data.bin")
	f, _ := os.Create(path)
	io.Copy(f, io.NewSectionReader(src, 0, src.size))
	f.Close()
	tests := []struct {
		name     string
		download func(*Client) func(context.Context, string, io.Writer) error
	}{
		{"Download", func(c *Client) func(context.Context, string, io.Writer) error { return c.Download }},
		{"DownloadLean", func(c *Client) func(context.Context, string, io.Writer) error { return c.DownloadLean }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Cut after the client sent enough read requests to be mid-file.
			p := sshdtest.StartProxy(t, s.Addr, 32<<10, 1)
			cfg := sshdConfig(t, s)
			cfg.Host = p.Addr
			c := dial(t, cfg)
			h := sha256.New()
			if err := tc.download(c)(t.Context(), path, h); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if [32]byte(h.Sum(nil)) != src.sum(t) {
				t.Fatal("downloaded bytes differ")
			}
			if p.Connections() != 2 {
				t.Logf("proxy saw %d connections (the cut may have come after the download)", p.Connections())
			}
		})
	}
}

// TestStalledUploadIsRetried: a link that stays up but stops moving data
// (keepalives off here, so only the stall watch can notice) is abandoned
// after StallTimeout and the upload completes on a new connection.
func TestStalledUploadIsRetried(t *testing.T) {
	s := sshdtest.Start(t)
	p := sshdtest.StartProxy(t, s.Addr, 0, 0)
	cfg := sshdConfig(t, s)
	cfg.Host = p.Addr
	cfg.KeepAliveInterval = -1
	cfg.StallTimeout = 400 * time.Millisecond
	c := dial(t, cfg)
	src := pattern{size: 16 << 20}
	dst := filepath.Join(s.Dir, "stalled.exe")
	var froze sync.Once
	err := c.Upload(t.Context(), src, src.size, dst, func(sent int64) {
		if sent > 2<<20 {
			froze.Do(p.FreezeAll)
		}
	})
	if err != nil {
		t.Fatalf("Upload: %v", err)
	}
	if p.Connections() != 2 {
		t.Errorf("connections = %d, want the frozen one and a new one", p.Connections())
	}
	if fileSum(t, dst) != src.sum(t) {
		t.Fatal("uploaded file differs")
	}
}

// TestUploadStream: a stream is written at the path itself, with no
// staged name; one whose source fails leaves nothing there.
func TestUploadStream(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, sshdConfig(t, s))
	content := bytes.Repeat([]byte("encoded "), 1<<17) // 1 MiB
	tests := []struct {
		name    string
		failAt  int // the source fails after this many bytes (0: never)
		wantErr bool
	}{
		{name: "a complete stream", failAt: 0},
		{name: "a source that fails half-way", failAt: len(content) / 2, wantErr: true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(s.Dir, fmt.Sprintf("stream-%d.swdt-zst", i))
			open := func() (io.ReadCloser, error) {
				var r io.Reader = bytes.NewReader(content)
				if tc.failAt > 0 {
					r = io.MultiReader(io.LimitReader(r, int64(tc.failAt)), iotest.ErrReader(errors.New("the encoder failed")))
				}
				return io.NopCloser(r), nil
			}
			sent, err := c.UploadStream(t.Context(), open, dst, nil)
			if (err != nil) != tc.wantErr {
				t.Fatalf("UploadStream: %v, want error %v", err, tc.wantErr)
			}
			if _, err := os.Stat(ops.PartPath(dst)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a staged name was used: %v", err)
			}
			got, rerr := os.ReadFile(dst)
			if tc.wantErr {
				if !errors.Is(rerr, fs.ErrNotExist) {
					t.Errorf("a failed stream left %s (%v)", dst, rerr)
				}
				return
			}
			if rerr != nil || !bytes.Equal(got, content) || sent != int64(len(content)) {
				t.Errorf("sent %d, file %d bytes (%v), want %d", sent, len(got), rerr, len(content))
			}
		})
	}
}
