package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestResolveLocal(t *testing.T) {
	dir := t.TempDir()
	content := []byte("MZ fake kubelet")
	bin := filepath.Join(dir, "kubelet.exe")
	if err := os.WriteFile(bin, content, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		ref     string
		sha     string
		wantErr string
	}{
		{name: "plain path", ref: bin},
		{name: "file URL", ref: "file://" + bin},
		{name: "expected digest upper case", ref: bin, sha: strings.ToUpper(digest(content))},
		{name: "missing file", ref: filepath.Join(dir, "nope.exe"), wantErr: "does not exist; build it first"},
		{name: "directory", ref: dir, wantErr: "is not a regular file"},
		{name: "remote file URL", ref: "file://server/share/kubelet.exe", wantErr: "file:///path"},
		{name: "unsupported scheme", ref: "ftp://example.invalid/kubelet.exe", wantErr: `unsupported scheme "ftp"`},
		{name: "wrong digest", ref: bin, sha: strings.Repeat("0", 64), wantErr: "sha256 mismatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Resolver{CacheDir: t.TempDir()}
			f, err := r.Resolve(context.Background(), tt.ref, tt.sha, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.SHA256 != digest(content) || f.Size != int64(len(content)) || f.Path != bin {
				t.Fatalf("got %+v", f)
			}
		})
	}
}

func TestResolveLocalRemembersHashUntilFileChanges(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "kubelet.exe")
	if err := os.WriteFile(bin, []byte("version-1"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Resolver{CacheDir: t.TempDir()}
	first, err := r.Resolve(context.Background(), bin, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Same size, new content and a new modification time: a rebuild.
	if err := os.WriteFile(bin, []byte("version-2"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(bin, later, later); err != nil {
		t.Fatal(err)
	}
	second, err := r.Resolve(context.Background(), bin, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.SHA256 == second.SHA256 || second.SHA256 != digest([]byte("version-2")) {
		t.Fatalf("rebuilt file kept its old hash: %s", second.SHA256)
	}
	records, _ := filepath.Glob(filepath.Join(r.CacheDir, "hashes", "*.json"))
	if len(records) != 1 {
		t.Fatalf("want one hash record, got %v", records)
	}
}

func TestResolveHTTP(t *testing.T) {
	content := []byte(strings.Repeat("kube-proxy.exe ", 1000))
	var gets, fullGets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		if r.URL.Path != "/v1.31.0/kube-proxy.exe" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		fullGets.Add(1)
		_, _ = w.Write(content)
	}))
	defer srv.Close()
	url := srv.URL + "/v1.31.0/kube-proxy.exe"
	ctx := context.Background()
	r := &Resolver{CacheDir: t.TempDir()}

	var lastReceived int64
	f, err := r.Resolve(ctx, url, digest(content), func(received, total int64) { lastReceived = received })
	if err != nil {
		t.Fatal(err)
	}
	if !f.Downloaded || f.SHA256 != digest(content) || lastReceived != int64(len(content)) {
		t.Fatalf("first resolve: %+v, progress %d", f, lastReceived)
	}
	got, err := os.ReadFile(f.Path)
	if err != nil || string(got) != string(content) {
		t.Fatalf("cached file content wrong: %v", err)
	}

	// With a digest that matches the cache, the server is not asked at all.
	if f, err = r.Resolve(ctx, url, digest(content), nil); err != nil || f.Downloaded {
		t.Fatalf("second resolve: %+v %v", f, err)
	}
	if gets.Load() != 1 {
		t.Fatalf("server asked %d times, want 1", gets.Load())
	}
	// Without a digest the cache is revalidated with the ETag: 304, no body.
	if f, err = r.Resolve(ctx, url, "", nil); err != nil || f.Downloaded || f.SHA256 != digest(content) {
		t.Fatalf("revalidated resolve: %+v %v", f, err)
	}
	if gets.Load() != 2 || fullGets.Load() != 1 {
		t.Fatalf("gets=%d full=%d, want 2 and 1", gets.Load(), fullGets.Load())
	}
}

func TestResolveHTTPFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("tampered"))
	}))
	defer srv.Close()
	tests := []struct {
		name    string
		url     string
		sha     string
		wantErr string
		is      error
	}{
		{name: "not found", url: srv.URL + "/missing", wantErr: "404"},
		{name: "wrong digest", url: srv.URL + "/kubelet.exe", sha: strings.Repeat("a", 64), wantErr: "expected aaaa", is: ErrDigestMismatch},
		{name: "unreachable", url: "http://127.0.0.1:1/kubelet.exe", wantErr: "check the URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Resolver{CacheDir: t.TempDir()}
			_, err := r.Resolve(context.Background(), tt.url, tt.sha, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want errors.Is %v", err, tt.is)
			}
			left, _ := filepath.Glob(filepath.Join(r.CacheDir, "downloads", "*"))
			if len(left) != 0 {
				t.Fatalf("a failed download left %v in the cache", left)
			}
		})
	}
}

// DESIGN.md §9: a source URL's user and password never appear in an
// error, whatever goes wrong.
func TestResolveNeverShowsURLCredentials(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/private":
			w.Header().Set("WWW-Authenticate", `Basic realm="builds"`)
			http.Error(w, "who are you?", http.StatusUnauthorized)
		case "/elsewhere":
			http.Redirect(w, r, "http://alice:s3cr3t@127.0.0.1:1/kubelet.exe", http.StatusFound)
		default:
			_, _ = w.Write([]byte("MZ kubelet"))
		}
	}))
	defer srv.Close()
	withCreds := strings.Replace(srv.URL, "http://", "http://alice:s3cr3t@", 1)
	tests := []struct{ name, url, sha, wantErr string }{
		{"unauthorized", withCreds + "/private", "", "401"},
		{"wrong digest", withCreds + "/kubelet.exe", strings.Repeat("a", 64), "sha256 mismatch"},
		{"unreachable", "http://alice:s3cr3t@127.0.0.1:1/kubelet.exe", "", "check the URL"},
		{"redirect to unreachable", withCreds + "/elsewhere", "", "check the URL"},
		{"token only", "http://s3cr3t@127.0.0.1:1/kubelet.exe", "", "check the URL"},
		{"unsupported scheme", "ftp://alice:s3cr3t@example.invalid/kubelet.exe", "", "unsupported scheme"},
		{"remote file URL", "file://alice:s3cr3t@server/share/kubelet.exe", "", "file:///path"},
		{"unescaped slash in password", "https://alice:s3/cr3t@example.invalid/kubelet.exe", "", "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Resolver{CacheDir: t.TempDir()}
			_, err := r.Resolve(context.Background(), tt.url, tt.sha, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			for _, secret := range []string{"alice", "s3cr3t", "cr3t"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows %q: %v", secret, err)
				}
			}
		})
	}
}

// A rebuild of the same length whose modification time was kept (cp -p,
// rsync -t, tar, coarse-mtime file systems) is still seen as a change.
func TestResolveLocalSeesRebuildWithSameSizeAndTime(t *testing.T) {
	tests := []struct {
		name    string
		rebuild func(t *testing.T, bin string, content []byte)
	}{
		{"rewritten in place (cp -p)", func(t *testing.T, bin string, content []byte) {
			if err := os.WriteFile(bin, content, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by a rename (rsync -t, tar)", func(t *testing.T, bin string, content []byte) {
			tmp := bin + ".tmp"
			if err := os.WriteFile(tmp, content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, bin); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "kubelet.exe")
			if err := os.WriteFile(bin, []byte("version-1"), 0o644); err != nil {
				t.Fatal(err)
			}
			mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
			if err := os.Chtimes(bin, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			r := &Resolver{CacheDir: t.TempDir()}
			if _, err := r.Resolve(context.Background(), bin, "", nil); err != nil {
				t.Fatal(err)
			}
			// The change time has the kernel's coarse clock: let it tick.
			time.Sleep(50 * time.Millisecond)
			tt.rebuild(t, bin, []byte("version-2"))
			if err := os.Chtimes(bin, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			f, err := r.Resolve(context.Background(), bin, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if f.SHA256 != digest([]byte("version-2")) {
				t.Errorf("the rebuild kept the old digest %s", f.SHA256)
			}
		})
	}
}

// With Rehash (swdt kubernetes --force) a local source is always read
// again, even when its record says it did not change, and the record is
// put right.
func TestResolveRehashIgnoresTheRecord(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kubelet.exe")
	if err := os.WriteFile(bin, []byte("MZ kubelet"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Resolver{CacheDir: t.TempDir()}
	if _, err := r.Resolve(context.Background(), bin, "", nil); err != nil {
		t.Fatal(err)
	}
	// A record that is wrong in a way no stat can tell.
	records, _ := filepath.Glob(filepath.Join(r.CacheDir, "hashes", "*.json"))
	if len(records) != 1 {
		t.Fatalf("want one hash record, got %v", records)
	}
	raw, err := os.ReadFile(records[0])
	if err != nil {
		t.Fatal(err)
	}
	stale := strings.Repeat("0", 64)
	if err := os.WriteFile(records[0], []byte(strings.Replace(string(raw), digest([]byte("MZ kubelet")), stale, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := r.Resolve(context.Background(), bin, "", nil); err != nil || f.SHA256 != stale {
		t.Fatalf("without Rehash: %+v, %v; want the record's digest (the test's premise)", f, err)
	}
	r.Rehash = true
	if f, err := r.Resolve(context.Background(), bin, "", nil); err != nil || f.SHA256 != digest([]byte("MZ kubelet")) {
		t.Fatalf("with Rehash: %+v, %v; want the file's digest", f, err)
	}
	r.Rehash = false
	if f, err := r.Resolve(context.Background(), bin, "", nil); err != nil || f.SHA256 != digest([]byte("MZ kubelet")) {
		t.Fatalf("after Rehash: %+v, %v; want the record put right", f, err)
	}
}

func TestLocalPath(t *testing.T) {
	tests := []struct {
		ref, want string
		local     bool
	}{
		{ref: "/home/me/kubelet.exe", want: "/home/me/kubelet.exe", local: true},
		{ref: "_output/kubelet.exe", want: "_output/kubelet.exe", local: true},
		{ref: `C:\k\kubelet.exe`, want: `C:\k\kubelet.exe`, local: true},
		{ref: "file:///tmp/kubelet.exe", want: "/tmp/kubelet.exe", local: true},
		{ref: "FILE:///tmp/kubelet.exe", want: "/tmp/kubelet.exe", local: true},
		{ref: "file://localhost/tmp/kubelet.exe", want: "/tmp/kubelet.exe", local: true},
		{ref: "file://server/share/kubelet.exe"},
		{ref: "https://dl.k8s.io/kubelet.exe"},
		{ref: "HTTP://dl.k8s.io/kubelet.exe"},
		{ref: "ftp://host/kubelet.exe"},
		{ref: ""},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, ok := LocalPath(tt.ref)
			if got != tt.want || ok != tt.local {
				t.Errorf("LocalPath(%q) = %q, %t; want %q, %t", tt.ref, got, ok, tt.want, tt.local)
			}
		})
	}
}
