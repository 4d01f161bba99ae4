package source

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A download is bounded: a body that stops coming is abandoned after the
// stall timeout, one that trickles in forever after the download timeout,
// one larger than the cap is refused (before anything is
// written when the server announces it), and one the cache directory has
// no room for is refused before it fills the disk.
func TestDownloadLimits(t *testing.T) {
	const chunk = 1000
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stalls":
			w.Header().Set("Content-Length", "100000")
			_, _ = w.Write(make([]byte, chunk))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case "/trickles": // a byte now and then: never a stall, never done
			w.Header().Set("Content-Length", "100000")
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-r.Context().Done():
					return
				case <-tick.C:
					_, _ = w.Write([]byte{0})
					w.(http.Flusher).Flush()
				}
			}
		case "/no-headers":
			<-r.Context().Done()
		case "/huge":
			w.Header().Set("Content-Length", "10995116277760") // 10 TiB
			_, _ = w.Write(make([]byte, chunk))
		case "/unannounced": // chunked: no Content-Length
			for range 4 {
				_, _ = w.Write(make([]byte, chunk))
				w.(http.Flusher).Flush()
			}
		case "/announced":
			w.Header().Set("Content-Length", "4000")
			_, _ = w.Write(make([]byte, 4*chunk))
		}
	}))
	defer srv.Close()
	withCreds := strings.Replace(srv.URL, "http://", "http://alice:s3cr3t@", 1)
	tests := []struct {
		name    string
		path    string
		r       Resolver
		is      error
		wantErr string
	}{
		{name: "body stalls", path: "/stalls", r: Resolver{StallTimeout: 300 * time.Millisecond},
			is: ErrStalled, wantErr: "nothing received for 300ms"},
		{name: "body trickles in for longer than the download timeout", path: "/trickles",
			r:  Resolver{StallTimeout: time.Minute, Timeout: 300 * time.Millisecond},
			is: ErrDownloadTimeout, wantErr: "not finished after 300ms; check the server and this machine's network, or raise --download-timeout"},
		{name: "headers never come", path: "/no-headers", r: Resolver{StallTimeout: 300 * time.Millisecond},
			is: ErrStalled, wantErr: "--download-stall-timeout"},
		{name: "announced size above the cap", path: "/huge",
			is: ErrTooLarge, wantErr: "the server announces 10.0 TiB, more than the 2.0 GiB cap"},
		{name: "body grows past the cap", path: "/unannounced", r: Resolver{MaxDownloadSize: 2048},
			is: ErrTooLarge, wantErr: "more than the 2.0 KiB cap"},
		{name: "announced size above the free space", path: "/announced",
			r:  Resolver{freeSpace: func(string) (uint64, bool) { return keepFree + chunk, true }},
			is: ErrNoSpace, wantErr: "the server announces 3.9 KiB, 1000 B available"},
		{name: "body grows past the free space", path: "/unannounced",
			r:  Resolver{freeSpace: func(string) (uint64, bool) { return keepFree + chunk, true }},
			is: ErrNoSpace, wantErr: "more arrived, 1000 B available (keeping 64.0 MiB free); free some space or pass another --cache-dir"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.r
			r.CacheDir = t.TempDir()
			// Bounds the old behaviour (a hang) so the test fails rather
			// than blocks.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			started := time.Now()
			_, err := r.Resolve(ctx, withCreds+tt.path, "", nil)
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.is, tt.wantErr)
			}
			if !strings.Contains(err.Error(), "http://***@127.0.0.1") || strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("the error does not name the URL, redacted: %v", err)
			}
			if d := time.Since(started); d > 5*time.Second {
				t.Errorf("took %s to give up", d)
			}
			left, _ := filepath.Glob(filepath.Join(r.CacheDir, "downloads", "*"))
			if len(left) != 0 {
				t.Errorf("the failed download left %v in the cache", left)
			}
		})
	}
}

// The cache directory's free space can be read where swdt is built for.
func TestFreeSpace(t *testing.T) {
	free, ok := diskFree(t.TempDir())
	switch runtime.GOOS {
	case "linux", "darwin", "windows":
		if !ok || free == 0 {
			t.Errorf("diskFree = %d, %v: want the free space of a temporary directory", free, ok)
		}
	}
}

// A URL's secrets (user information, a presigned query) never reach the
// cache's records, and the record still tells the URL's own download
// from another's: a second resolve finds it, another query does not.
func TestDownloadCacheKeepsNoSecret(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write([]byte("MZ kubelet"))
	}))
	defer srv.Close()
	r := Resolver{CacheDir: t.TempDir()}
	ref := strings.Replace(srv.URL, "http://", "http://alice:s3cr3t@", 1) + "/kubelet.exe?X-Amz-Signature=presigned0123"
	for _, want := range []int{1, 2} {
		f, err := r.Resolve(context.Background(), ref, "", nil)
		if err != nil || requests != want || f.Size != int64(len("MZ kubelet")) {
			t.Fatalf("resolve: %+v, %v after %d requests", f, err, requests)
		}
	}
	records, _ := filepath.Glob(filepath.Join(r.CacheDir, "downloads", "*"))
	if len(records) != 2 {
		t.Fatalf("cache holds %v, want the download and its record", records)
	}
	for _, p := range records {
		raw, err := os.ReadFile(p)
		if err != nil || strings.Contains(string(raw), "s3cr3t") || strings.Contains(string(raw), "presigned0123") {
			t.Errorf("%s holds a secret of the URL: %q, %v", p, raw, err)
		}
	}
	if _, ok := r.cachedDownload(strings.Replace(ref, "presigned0123", "other", 1)); ok {
		t.Error("another URL's download was taken for this one")
	}
	if _, ok := r.cachedDownload(ref); !ok {
		t.Error("the URL's own download was not found")
	}
}
