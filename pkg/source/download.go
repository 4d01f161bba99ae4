package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/swdt/pkg/redact"
)

// downloadMeta is kept beside a cached download to revalidate it.
type downloadMeta struct {
	URL          string `json:"url"`
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
	dir, err := r.cacheDir()
	if err != nil {
		return nil, err
	}
	dir = filepath.Join(dir, "downloads")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create download cache %s: %w", dir, err)
	}
	key := sha256.Sum256([]byte(ref))
	dataPath := filepath.Join(dir, hex.EncodeToString(key[:16]))
	metaPath := dataPath + ".json"

	cached, haveCached := readMeta(metaPath, dataPath, ref)
	if haveCached && wantSHA256 != "" && cached.SHA256 == wantSHA256 {
		return &File{Ref: ref, Path: dataPath, Size: cached.Size, SHA256: cached.SHA256}, nil
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref, nil)
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

	tmp, err := os.CreateTemp(dir, "partial-*")
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", name, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename below
	h := sha256.New()
	counter := &countingWriter{total: resp.ContentLength, progress: progress}
	n, copyErr := io.Copy(io.MultiWriter(tmp, h, counter), resp.Body)
	closeErr := tmp.Close()
	if copyErr != nil {
		return nil, fmt.Errorf("download %s: %w", name, copyErr)
	}
	if closeErr != nil {
		return nil, fmt.Errorf("download %s: %w", name, closeErr)
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
	meta := downloadMeta{URL: ref, ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified"), Size: n, SHA256: sum}
	if raw, err := json.Marshal(meta); err == nil {
		_ = os.WriteFile(metaPath, raw, 0o600) // without it the next run downloads again
	}
	return &File{Ref: ref, Path: dataPath, Size: n, SHA256: sum, Downloaded: true}, nil
}

// readMeta returns the cached download's record when both it and the data
// file are present and agree on the size.
func readMeta(metaPath, dataPath, ref string) (downloadMeta, bool) {
	var meta downloadMeta
	raw, err := os.ReadFile(metaPath)
	if err != nil || json.Unmarshal(raw, &meta) != nil || meta.URL != ref {
		return meta, false
	}
	info, err := os.Stat(dataPath)
	if err != nil || info.Size() != meta.Size {
		return meta, false
	}
	return meta, true
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
