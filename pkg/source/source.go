// Package source resolves where a binary comes from (a local path, a
// file:// URL or an http(s):// URL) into a local, hashed file that can be
// streamed to a node.
//
// Downloads land in a cache (by default under the user cache directory),
// are verified against an expected SHA-256 before use, and are reused when
// the server says they did not change. It never touches a node.
package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/redact"
)

// File is a resolved source: a local regular file and its digest.
type File struct {
	// Ref is the sourceURL as the user wrote it (after path resolution).
	Ref string
	// Path is the local file to read.
	Path string
	// Size in bytes.
	Size int64
	// SHA256 is the lower-case hex digest of the content.
	SHA256 string
	// Downloaded is true when this call fetched the file over the network.
	Downloaded bool
}

// Open opens the file for streaming to a node.
func (f *File) Open() (*os.File, error) {
	fh, err := os.Open(f.Path)
	if err != nil {
		return nil, fmt.Errorf("open source %s: %w", redact.URLs(f.Ref), err)
	}
	return fh, nil
}

// Progress is told how many bytes of a download have arrived; total is -1
// when the server does not say.
type Progress func(received, total int64)

// Resolver resolves sources.
type Resolver struct {
	// CacheDir holds downloads and hash records. Empty means
	// <user cache dir>/swdt.
	CacheDir string
	// Client fetches http(s) sources; nil means a client with sane timeouts.
	Client *http.Client
	// Rehash reads and hashes every local source, even one the hash cache
	// says is unchanged, and puts the cache right (swdt kubernetes --force).
	Rehash bool
	// MaxDownloadSize is the largest download accepted, in bytes; 0 means
	// DefaultMaxDownloadSize.
	MaxDownloadSize int64
	// StallTimeout is how long a download may receive nothing (headers
	// included) before it is abandoned; 0 means DefaultStallTimeout.
	StallTimeout time.Duration
	// Timeout bounds a whole download, headers to last byte, however
	// slowly it keeps moving; 0 means DefaultDownloadTimeout.
	Timeout time.Duration

	// freeSpace reports the bytes available in a directory; nil means
	// diskFree. Tests replace it.
	freeSpace func(dir string) (uint64, bool)
}

// ErrDigestMismatch is returned when a source's SHA-256 is not the one the
// config expects.
var ErrDigestMismatch = errors.New("sha256 mismatch")

// Resolve turns ref into a local file. wantSHA256, when not empty, must match
// the content. progress may be nil. Errors show ref with the credentials
// of a URL redacted.
func (r *Resolver) Resolve(ctx context.Context, ref, wantSHA256 string, progress Progress) (*File, error) {
	wantSHA256 = strings.ToLower(strings.TrimSpace(wantSHA256))
	name := redact.URLs(ref)
	var f *File
	var err error
	if path, ok := LocalPath(ref); ok {
		f, err = r.local(ref, name, path)
	} else {
		u, _ := url.Parse(ref) // LocalPath parsed it
		switch {
		case u.Scheme == "http" || u.Scheme == "https":
			f, err = r.download(ctx, ref, name, wantSHA256, progress)
		case u.Scheme == "file":
			return nil, fmt.Errorf("source %s: file URLs must name a local path (file:///path)", name)
		default:
			return nil, fmt.Errorf("source %s: unsupported scheme %q (use a local path, file://, http:// or https://)", name, u.Scheme)
		}
	}
	if err != nil {
		return nil, err
	}
	if wantSHA256 != "" && f.SHA256 != wantSHA256 {
		return nil, fmt.Errorf("source %s: %w: expected %s, got %s; fix sha256 in the config or the source", name, ErrDigestMismatch, wantSHA256, f.SHA256)
	}
	return f, nil
}

// LocalPath is swdt's one answer to "is this source a local file, and
// which?": a plain path (a drive letter such as C: is not a scheme) is
// itself, and a file:// URL (of any case, with no host or localhost)
// names its path; http(s):// and anything else are not local.
func LocalPath(ref string) (string, bool) {
	if ref == "" {
		return "", false
	}
	u, err := url.Parse(ref)
	if err != nil || len(u.Scheme) <= 1 {
		// Not a URL: a path, including C:\x (a one-letter "scheme").
		return ref, true
	}
	if u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
		return "", false
	}
	return u.Path, true
}

func (r *Resolver) cacheDir() (string, error) { return CacheDir(r.CacheDir) }

// CacheDir is swdt's cache directory: override when set, else
// <user cache dir>/swdt.
func CacheDir(override string) (string, error) {
	if override != "" {
		return override, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the user cache directory: %w (set XDG_CACHE_HOME or HOME)", err)
	}
	return filepath.Join(base, "swdt"), nil
}

// local stats and hashes a local file. Hashes are remembered by path, size,
// modification time and fileID so that an unchanged multi-hundred-megabyte
// build output is not read again on every run, while a rebuild that kept
// size and time still is. name is ref as errors show it.
func (r *Resolver) local(ref, name, path string) (*File, error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// A node file problem, as a missing section is: exit 2.
		return nil, exitcode.WithCode(exitcode.Usage, &notBuiltError{name: name})
	case err != nil:
		return nil, fmt.Errorf("source %s: %w", name, err)
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("source %s is not a regular file", name)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", name, err)
	}
	id, cacheable := statFileID(abs, info)
	rec := hashRecord{Path: abs, Size: info.Size(), ModTime: info.ModTime().UTC(), ID: id}
	if cacheable && !r.Rehash {
		if sum, ok := r.lookupHash(rec); ok {
			return &File{Ref: ref, Path: abs, Size: info.Size(), SHA256: sum}, nil
		}
	}
	sum, size, err := hashFile(abs)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", name, err)
	}
	if size != info.Size() {
		return nil, fmt.Errorf("source %s changed while it was read; is a build still writing it?", name)
	}
	if cacheable {
		// rec has the fileID from before the hash: a write during it
		// changes the change time, so the next run will not trust rec.
		rec.SHA256 = sum
		r.storeHash(rec)
	}
	return &File{Ref: ref, Path: abs, Size: size, SHA256: sum}, nil
}

type hashRecord struct {
	Path    string    `json:"path"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"modTime"`
	ID      fileID    `json:"id"`
	SHA256  string    `json:"sha256"`
}

func (r *Resolver) hashRecordPath(path string) (string, bool) {
	dir, err := r.cacheDir()
	if err != nil {
		return "", false
	}
	key := sha256.Sum256([]byte(path))
	return filepath.Join(dir, "hashes", hex.EncodeToString(key[:16])+".json"), true
}

func (r *Resolver) lookupHash(want hashRecord) (string, bool) {
	p, ok := r.hashRecordPath(want.Path)
	if !ok {
		return "", false
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	var got hashRecord
	if json.Unmarshal(raw, &got) != nil {
		return "", false
	}
	if got.Path != want.Path || got.Size != want.Size || !got.ModTime.Equal(want.ModTime) || got.ID != want.ID || len(got.SHA256) != 64 {
		return "", false
	}
	return got.SHA256, true
}

// storeHash is best effort: a cache that cannot be written only costs a
// re-hash next time.
func (r *Resolver) storeHash(rec hashRecord) {
	p, ok := r.hashRecordPath(rec.Path)
	if !ok {
		return
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return
	}
	if os.MkdirAll(filepath.Dir(p), 0o700) != nil {
		return
	}
	tmp := p + ".tmp"
	if os.WriteFile(tmp, raw, 0o600) == nil {
		_ = os.Rename(tmp, p)
	}
}

// hashFile returns the SHA-256 of the file at path and its length. The
// file is read in large blocks while the block before is hashed, beside
// it: a rebuild's hash under --watch is what its swap waits for, and the
// SHA-256 alone is the most it should take.
func hashFile(path string) (string, int64, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer fh.Close()
	h := sha256.New()
	// Two blocks take turns: one is read while the other is hashed.
	blocks := make(chan []byte, 1)
	free := make(chan []byte, 2)
	free <- make([]byte, hashBlock)
	free <- make([]byte, hashBlock)
	hashed := make(chan struct{})
	go func() {
		defer close(hashed)
		for b := range blocks {
			h.Write(b)
			free <- b[:cap(b)]
		}
	}()
	var n int64
	for {
		b := <-free
		m, rerr := io.ReadFull(fh, b)
		if m > 0 {
			blocks <- b[:m]
			n += int64(m)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			close(blocks)
			<-hashed
			return "", 0, fmt.Errorf("read: %w", rerr)
		}
	}
	close(blocks)
	<-hashed
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// hashBlock is how much of a file hashFile reads at a time.
const hashBlock = 1 << 20

// notBuiltError is a local source that does not exist (a build not made
// yet); it is fs.ErrNotExist to errors.Is.
type notBuiltError struct{ name string }

func (e *notBuiltError) Error() string {
	return fmt.Sprintf("source %s does not exist; build it first or fix sourceURL", e.name)
}

func (e *notBuiltError) Unwrap() error { return fs.ErrNotExist }
