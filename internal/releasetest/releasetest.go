// Package releasetest serves the official release layout of Kubernetes,
// containerd, the CNI plugins and rancher/wins for Windows from an httptest server on
// 127.0.0.1, as an air-gapped mirror would: tests point swdt at it with
// the SWDT_*_RELEASE_URL variables (pkg/source).
package releasetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"sync"
	"testing"
)

// Server is a release mirror. Files may be added, replaced or removed
// while it runs.
type Server struct {
	// URL is the server's base: a kind's base URL is URL + "/" + kind.
	URL string

	mu    sync.Mutex
	files map[string][]byte
}

// Start starts a mirror that is closed when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{files: map[string][]byte{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		body, ok := s.files[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Mirror points swdt at s for every release kind (t.Setenv).
func (s *Server) Mirror(t *testing.T) {
	t.Helper()
	for kind, env := range map[string]string{"kubernetes": "SWDT_KUBERNETES_RELEASE_URL", "containerd": "SWDT_CONTAINERD_RELEASE_URL", "cni": "SWDT_CNI_RELEASE_URL", "wins": "SWDT_WINS_RELEASE_URL"} {
		t.Setenv(env, s.URL+"/"+kind)
	}
}

// Put serves body at p (a path below the server's root).
func (s *Server) Put(p string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[p] = body
}

// Remove stops serving p.
func (s *Server) Remove(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.files, p)
}

// Sum is the hex SHA-256 of b.
func Sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Kubernetes publishes a Kubernetes binary for windows/amd64 with its
// .sha256 (a bare digest, as dl.k8s.io has it) and returns its path.
func (s *Server) Kubernetes(version, name string, body []byte) string {
	p := "/kubernetes/" + version + "/bin/windows/amd64/" + name
	s.Put(p, body)
	s.Put(p+".sha256", []byte(Sum(body)))
	return p
}

// Containerd publishes containerd's Windows archive holding files under
// bin/, with its .sha256sum, and returns the archive's path.
func (s *Server) Containerd(version string, files map[string][]byte) string {
	name := "containerd-" + version + "-windows-amd64.tar.gz"
	members := map[string][]byte{}
	for n, b := range files {
		members["bin/"+n] = b
	}
	return s.archive("/containerd/v"+version+"/"+name, ".sha256sum", members)
}

// CNI publishes the CNI plugins' Windows archive holding files at its
// top (as ./NAME), with its .sha256, and returns the archive's path.
func (s *Server) CNI(version string, files map[string][]byte) string {
	name := "cni-plugins-windows-amd64-v" + version + ".tgz"
	members := map[string][]byte{}
	for n, b := range files {
		members["./"+n] = b
	}
	return s.archive("/cni/v"+version+"/"+name, ".sha256", members)
}

// Wins publishes rancher/wins' wins.exe of version (v0.4.16 and later
// with sha256.txt beside it, as their releases have) and returns its
// path.
func (s *Server) Wins(version string, body []byte, checksums bool) string {
	p := "/wins/" + version + "/wins.exe"
	s.Put(p, body)
	if checksums {
		s.Put("/wins/"+version+"/sha256.txt", []byte(Sum([]byte("install"))+"  install.ps1\n"+Sum(body)+"  wins.exe\n"))
	}
	return p
}

func (s *Server) archive(p, sumExt string, members map[string][]byte) string {
	body := Archive(members)
	s.Put(p, body)
	s.Put(p+sumExt, []byte(Sum(body)+"  "+path.Base(p)+"\n"))
	return p
}

// Archive is a gzipped tar of members (name to content), with a folder
// entry for bin/ as release archives have.
func Archive(members map[string][]byte) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	_ = tw.WriteHeader(&tar.Header{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755})
	for _, n := range slices.Sorted(maps.Keys(members)) {
		b := members[n]
		_ = tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(b))})
		_, _ = tw.Write(b)
	}
	_ = tw.Close()
	_ = gz.Close()
	return buf.Bytes()
}
