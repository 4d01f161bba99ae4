package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/swdt/pkg/redact"
)

// Download bounds: what a Resolver uses when its fields are zero.
const (
	// DefaultMaxDownloadSize is far more than any Kubernetes binary for
	// Windows, and a bound on what a wrong or hostile server can make swdt
	// write.
	DefaultMaxDownloadSize = 2 << 30
	// DefaultStallTimeout is how long a download may receive nothing, as
	// for uploads (remote.DefaultStallTimeout).
	DefaultStallTimeout = 60 * time.Second
	// DefaultDownloadTimeout bounds a whole download: a server that
	// trickles a few bytes before each stall timeout is given up on too.
	// 100 MiB takes 30 minutes at 57 KiB/s.
	DefaultDownloadTimeout = 30 * time.Minute
)

// keepFree is the space a download must leave free in the cache
// directory's file system, so that it never fills the disk to the last
// byte.
const keepFree = 64 << 20

var (
	// ErrStalled is returned when a download receives nothing for the
	// stall timeout.
	ErrStalled = errors.New("download stalled")
	// ErrDownloadTimeout is returned when a download has not finished
	// within the download timeout.
	ErrDownloadTimeout = errors.New("download took too long")
	// ErrTooLarge is returned when a download is larger than the cap.
	ErrTooLarge = errors.New("download too large")
	// ErrNoSpace is returned when the cache directory has no room for a
	// download.
	ErrNoSpace = errors.New("not enough free space for the download")
)

func (r *Resolver) maxDownloadSize() int64 {
	if r.MaxDownloadSize > 0 {
		return r.MaxDownloadSize
	}
	return DefaultMaxDownloadSize
}

func (r *Resolver) timeout() time.Duration {
	if r.Timeout > 0 {
		return r.Timeout
	}
	return DefaultDownloadTimeout
}

func (r *Resolver) stallTimeout() time.Duration {
	if r.StallTimeout > 0 {
		return r.StallTimeout
	}
	return DefaultStallTimeout
}

// room returns how many bytes a download may write into dir: what is free
// there less keepFree; ok is false when the free space cannot be read.
func (r *Resolver) room(dir string) (int64, bool) {
	free := diskFree
	if r.freeSpace != nil {
		free = r.freeSpace
	}
	n, ok := free(dir)
	if !ok {
		return 0, false
	}
	if n <= keepFree {
		return 0, true
	}
	return int64(min(n-keepFree, uint64(math.MaxInt64))), true
}

// downloadMeta is kept beside a cached download to revalidate it. It
// never holds the URL's secrets: URL is the URL as errors show it
// (redacted), and RefSHA256 the digest of the whole URL, which tells
// that the record is this URL's.
type downloadMeta struct {
	URL          string `json:"url"`
	RefSHA256    string `json:"refSha256"`
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"lastModified,omitempty"`
	Size         int64  `json:"size"`
	SHA256       string `json:"sha256"`
}

func (r *Resolver) client() *http.Client {
	if r.Client != nil {
		return r.Client
	}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
	}}
}

// download fetches ref into the cache, or reuses the cached copy when its
// digest already matches wantSHA256 or the server answers 304 Not Modified.
// name is ref as errors show it.
func (r *Resolver) download(ctx context.Context, ref, name, wantSHA256 string, progress Progress) (*File, error) {
	dir, dataPath, metaPath, err := r.downloadPaths(ref)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create download cache %s: %w", dir, err)
	}

	cached, haveCached := readMeta(metaPath, dataPath, ref)
	if haveCached && wantSHA256 != "" && cached.SHA256 == wantSHA256 {
		return &File{Ref: ref, Path: dataPath, Size: cached.Size, SHA256: cached.SHA256}, nil
	}

	// The stall watch runs from the request on: a server that never
	// answers stalls as surely as a body that stops.
	stall := r.stallTimeout()
	reqCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watch := time.AfterFunc(stall, func() { cancel(ErrStalled) })
	defer watch.Stop()
	budget := r.timeout()
	deadline := time.AfterFunc(budget, func() { cancel(ErrDownloadTimeout) })
	defer deadline.Stop()
	cutOff := func() error {
		switch cause := context.Cause(reqCtx); {
		case errors.Is(cause, ErrStalled):
			return fmt.Errorf("download %s: %w: nothing received for %s; check the server and this machine's network, or raise --download-stall-timeout", name, ErrStalled, stall)
		case errors.Is(cause, ErrDownloadTimeout):
			return fmt.Errorf("download %s: %w: not finished after %s; check the server and this machine's network, or raise --download-timeout", name, ErrDownloadTimeout, budget)
		}
		return nil
	}
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, ref, nil)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", name, err)
	}
	if haveCached {
		if cached.ETag != "" {
			req.Header.Set("If-None-Match", cached.ETag)
		}
		if cached.LastModified != "" {
			req.Header.Set("If-Modified-Since", cached.LastModified)
		}
	}
	resp, err := r.client().Do(req)
	if err != nil {
		if serr := cutOff(); serr != nil {
			return nil, serr
		}
		var uerr *url.Error
		if errors.As(err, &uerr) {
			// The client hides a password, not a user or a token.
			uerr.URL = redact.URLs(uerr.URL)
		}
		return nil, fmt.Errorf("download %s: %w (check the URL and this machine's network or proxy settings)", name, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && haveCached:
		return &File{Ref: ref, Path: dataPath, Size: cached.Size, SHA256: cached.SHA256}, nil
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("download %s: server answered %s", name, resp.Status)
	}

	maxSize := r.maxDownloadSize()
	if resp.ContentLength > maxSize {
		return nil, fmt.Errorf("download %s: %w: the server announces %s, more than the %s cap; raise --max-download-size if it is right",
			name, ErrTooLarge, sizeText(resp.ContentLength), sizeText(maxSize))
	}
	room, known := r.room(dir)
	if known && resp.ContentLength > room {
		return nil, noSpace(name, dir, "the server announces "+sizeText(resp.ContentLength), room)
	}
	limit := maxSize
	if known {
		limit = min(limit, room)
	}

	tmp, err := os.CreateTemp(dir, "partial-*")
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", name, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename below
	h := sha256.New()
	counter := &countingWriter{total: resp.ContentLength, progress: progress}
	// One byte past the limit tells a body that is too large from one
	// that fits exactly.
	body := &watchedReader{r: io.LimitReader(resp.Body, limit+1), watch: watch, stall: stall}
	n, copyErr := io.Copy(io.MultiWriter(tmp, h, counter), body)
	closeErr := tmp.Close()
	if serr := cutOff(); copyErr != nil && serr != nil {
		return nil, serr
	}
	switch {
	case copyErr != nil:
		return nil, fmt.Errorf("download %s: %w", name, copyErr)
	case closeErr != nil:
		return nil, fmt.Errorf("download %s: %w", name, closeErr)
	case n > maxSize:
		return nil, fmt.Errorf("download %s: %w: more than the %s cap arrived; raise --max-download-size if it is right",
			name, ErrTooLarge, sizeText(maxSize))
	case n > limit:
		return nil, noSpace(name, dir, "more arrived", room)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return nil, fmt.Errorf("download %s: got %d of %d bytes", name, n, resp.ContentLength)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if wantSHA256 != "" && sum != wantSHA256 {
		// Not cached: a wrong file must not be picked up by a later run.
		return nil, fmt.Errorf("source %s: %w: expected %s, got %s; fix sha256 in the config or the source", name, ErrDigestMismatch, wantSHA256, sum)
	}
	if err := os.Rename(tmp.Name(), dataPath); err != nil {
		return nil, fmt.Errorf("download %s: store in cache: %w", name, err)
	}
	meta := downloadMeta{URL: redact.URLs(ref), RefSHA256: refDigest(ref), ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified"), Size: n, SHA256: sum}
	if raw, err := json.Marshal(meta); err == nil {
		_ = os.WriteFile(metaPath, raw, 0o600) // without it the next run downloads again
	}
	return &File{Ref: ref, Path: dataPath, Size: n, SHA256: sum, Downloaded: true}, nil
}

// downloadPaths are where ref's download is cached: the folder, the data
// and the record beside it.
func (r *Resolver) downloadPaths(ref string) (dir, dataPath, metaPath string, err error) {
	if dir, err = r.cacheDir(); err != nil {
		return "", "", "", err
	}
	dir = filepath.Join(dir, "downloads")
	dataPath = filepath.Join(dir, refDigest(ref)[:32])
	return dir, dataPath, dataPath + ".json", nil
}

// refDigest is the hex SHA-256 of a source URL: the name of its cached
// download and the proof that a record is its own.
func refDigest(ref string) string {
	key := sha256.Sum256([]byte(ref))
	return hex.EncodeToString(key[:])
}

// cachedDownload returns the cached copy of ref's download, without
// asking the server, when there is one.
func (r *Resolver) cachedDownload(ref string) (*File, bool) {
	_, dataPath, metaPath, err := r.downloadPaths(ref)
	if err != nil {
		return nil, false
	}
	meta, ok := readMeta(metaPath, dataPath, ref)
	if !ok {
		return nil, false
	}
	return &File{Ref: ref, Path: dataPath, Size: meta.Size, SHA256: meta.SHA256}, true
}

// readMeta returns the cached download's record when both it and the data
// file are present and agree on the size.
func readMeta(metaPath, dataPath, ref string) (downloadMeta, bool) {
	var meta downloadMeta
	raw, err := os.ReadFile(metaPath)
	if err != nil || json.Unmarshal(raw, &meta) != nil || meta.RefSHA256 != refDigest(ref) {
		return meta, false
	}
	info, err := os.Stat(dataPath)
	if err != nil || info.Size() != meta.Size {
		return meta, false
	}
	return meta, true
}

// noSpace says that a download does not fit in dir, where room bytes are
// available; what says how much it needs.
func noSpace(name, dir, what string, room int64) error {
	return fmt.Errorf("download %s: %w in %s: %s, %s available (keeping %s free); free some space or pass another --cache-dir",
		name, ErrNoSpace, dir, what, sizeText(room), sizeText(keepFree))
}

// watchedReader pushes the stall watch back whenever data arrives.
type watchedReader struct {
	r     io.Reader
	watch *time.Timer
	stall time.Duration
}

func (w *watchedReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	if n > 0 {
		w.watch.Reset(w.stall)
	}
	return n, err
}

// sizeText formats a byte count for a message: 512 B, 1.5 KiB, 2.0 GiB.
func sizeText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for v := n / unit; v >= unit; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

type countingWriter struct {
	received, total int64
	progress        Progress
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.received += int64(len(p))
	if c.progress != nil {
		c.progress(c.received, c.total)
	}
	return len(p), nil
}
