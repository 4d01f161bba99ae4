package source_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/releasetest"
	"sigs.k8s.io/swdt/pkg/source"
)

// A release binary is found by kind, version and file name at the
// official layout (here a mirror on loopback), verified against the
// release's checksum file, and an archive's member is extracted; a
// missing checksum file, a mismatch, a 404 and a missing member each
// fail with what to do.
func TestResolveBinaryRelease(t *testing.T) {
	srv := releasetest.Start(t)
	srv.Mirror(t)
	kubelet := []byte("MZ kubelet v1.37.2")
	srv.Kubernetes("v1.37.2", "kubelet.exe", kubelet)
	srv.Kubernetes("v1.37.1", "kubelet.exe", []byte("MZ kubelet v1.37.1"))
	srv.Put("/kubernetes/v1.37.1/bin/windows/amd64/kubelet.exe.sha256", []byte(releasetest.Sum([]byte("something else"))))
	p := srv.Kubernetes("v1.36.0", "kubelet.exe", []byte("MZ kubelet v1.36.0"))
	srv.Remove(p + ".sha256")
	ctrd := map[string][]byte{"containerd.exe": []byte("MZ containerd"), "containerd-shim-runhcs-v1.exe": []byte("MZ shim"), "ctr.exe": []byte("MZ ctr")}
	srv.Containerd("2.1.4", ctrd)
	cni := map[string][]byte{"win-bridge.exe": []byte("MZ win-bridge"), "host-local.exe": []byte("MZ host-local")}
	srv.CNI("1.6.2", cni)
	wins := []byte("MZ wins v0.15.0")
	srv.Wins("v0.15.0", wins, true)
	oldWins := []byte("MZ wins v0.4.15")
	srv.Wins("v0.4.15", oldWins, false)
	local := filepath.Join(t.TempDir(), "containerd-2.1.4-windows-amd64.tar.gz")
	if err := os.WriteFile(local, releasetest.Archive(map[string][]byte{"bin/containerd.exe": ctrd["containerd.exe"]}), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		b       source.Binary
		want    []byte
		is      error
		wantErr string
	}{
		{name: "kubelet by version", b: source.Binary{Ref: "release:kubernetes", Version: "v1.37.2", Name: "kubelet.exe"}, want: kubelet},
		{name: "version without v, sha256 that agrees", b: source.Binary{Ref: "release:kubernetes", Version: "1.37.2", Name: "kubelet.exe", SHA256: releasetest.Sum(kubelet)}, want: kubelet},
		{name: "containerd from the archive's bin/", b: source.Binary{Ref: "release:containerd", Version: "2.1.4", Name: "containerd.exe"}, want: ctrd["containerd.exe"]},
		{name: "containerd's shim, Windows' case", b: source.Binary{Ref: "release:containerd", Version: "v2.1.4", Name: "Containerd-Shim-Runhcs-V1.exe"}, want: ctrd["containerd-shim-runhcs-v1.exe"]},
		{name: "a CNI plugin from the archive's top", b: source.Binary{Ref: "release:cni", Version: "1.6.2", Name: "win-bridge.exe"}, want: cni["win-bridge.exe"]},
		{name: "a local archive", b: source.Binary{Ref: local, Name: "containerd.exe"}, want: ctrd["containerd.exe"]},
		{name: "checksum mismatch", b: source.Binary{Ref: "release:kubernetes", Version: "v1.37.1", Name: "kubelet.exe"},
			is: source.ErrDigestMismatch, wantErr: "sha256 mismatch"},
		{name: "sha256 in the config disagrees with the release", b: source.Binary{Ref: "release:kubernetes", Version: "v1.37.2", Name: "kubelet.exe", SHA256: releasetest.Sum([]byte("x"))},
			is: source.ErrDigestMismatch, wantErr: "the release's checksum file"},
		{name: "missing checksum file", b: source.Binary{Ref: "release:kubernetes", Version: "v1.36.0", Name: "kubelet.exe"},
			wantErr: "read the release's checksum file: download " + srv.URL + "/kubernetes/v1.36.0/bin/windows/amd64/kubelet.exe.sha256: server answered 404 Not Found; check the version, and SWDT_KUBERNETES_RELEASE_URL"},
		{name: "a version that does not exist", b: source.Binary{Ref: "release:containerd", Version: "9.9.9", Name: "containerd.exe"},
			wantErr: "404 Not Found; check the version"},
		{name: "no version", b: source.Binary{Ref: "release:cni", Name: "win-bridge.exe"}, wantErr: "release:cni needs a version, for example 1.6.2"},
		{name: "a member the archive lacks", b: source.Binary{Ref: "release:cni", Version: "1.6.2", Name: "flannel.exe"},
			wantErr: "has no flannel.exe (looked for bin/flannel.exe and flannel.exe at its top; it holds host-local.exe, win-bridge.exe)"},
		{name: "wins from rancher/wins' release", b: source.Binary{Ref: "release:wins", Version: "v0.15.0", Name: "wins.exe"}, want: wins},
		{name: "wins under another name", b: source.Binary{Ref: "release:wins", Version: "0.15.0", Name: "rancher-wins.exe"}, want: wins},
		{name: "an old wins with the node file's digest", b: source.Binary{Ref: "release:wins", Version: "v0.4.15", Name: "wins.exe", SHA256: releasetest.Sum(oldWins)}, want: oldWins},
		{name: "an old wins without a digest", b: source.Binary{Ref: "release:wins", Version: "v0.4.15", Name: "wins.exe"},
			wantErr: "release:wins v0.4.15 publishes no checksum file: set the digest of its wins.exe in sha256"},
		{name: "an old wins with a wrong digest", b: source.Binary{Ref: "release:wins", Version: "v0.4.15", Name: "wins.exe", SHA256: releasetest.Sum(wins)},
			is: source.ErrDigestMismatch, wantErr: "sha256 mismatch"},
		{name: "an unknown release", b: source.Binary{Ref: "release:docker", Version: "1", Name: "dockerd.exe"}, wantErr: "unknown release (use release:kubernetes, release:containerd, release:cni, release:wins)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &source.Resolver{CacheDir: t.TempDir()}
			f, err := r.ResolveBinary(context.Background(), tt.b, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || tt.is != nil && !errors.Is(err, tt.is) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(f.Path)
			if err != nil || string(got) != string(tt.want) || f.SHA256 != releasetest.Sum(tt.want) {
				t.Fatalf("got %q (%s), %v; want %q", got, f.SHA256, err, tt.want)
			}
		})
	}
}

// A release is downloaded once: a second resolution needs no server (the
// checksum file and the archive are in the cache, the archive found by
// its digest) and finds the member already extracted.
func TestResolveBinaryReleaseCached(t *testing.T) {
	srv := releasetest.Start(t)
	srv.Mirror(t)
	p := srv.Containerd("2.1.4", map[string][]byte{"containerd.exe": []byte("MZ containerd"), "ctr.exe": []byte("MZ ctr")})
	r := &source.Resolver{CacheDir: t.TempDir()}
	ctx := context.Background()
	first, err := r.ResolveBinary(ctx, source.Binary{Ref: "release:containerd", Version: "2.1.4", Name: "containerd.exe"}, nil)
	if err != nil || !first.Downloaded {
		t.Fatalf("first: %+v, %v", first, err)
	}
	srv.Remove(p)
	srv.Remove(p + ".sha256sum")
	for _, name := range []string{"containerd.exe", "ctr.exe"} {
		f, err := r.ResolveBinary(ctx, source.Binary{Ref: "release:containerd", Version: "2.1.4", Name: name}, nil)
		if err != nil || f.Downloaded {
			t.Fatalf("%s again: %+v, %v", name, f, err)
		}
	}
}

// The node file's validation and the resolver know the same releases:
// the provisioners', and wins' own.
func TestReleaseKindsAgree(t *testing.T) {
	if got, want := source.ReleaseKinds(), append(v1alpha1.ReleaseKinds(), v1alpha1.ReleaseWins); !slices.Equal(got, want) {
		t.Errorf("source.ReleaseKinds() = %q, v1alpha1.ReleaseKinds() = %q", got, want)
	}
}

// A checksum file the cache holds is read again when the release does not
// match it: the mirror may have fixed it since.
func TestResolveBinaryReleaseChecksumFixed(t *testing.T) {
	srv := releasetest.Start(t)
	srv.Mirror(t)
	kubelet := []byte("MZ kubelet v1.37.2")
	p := srv.Kubernetes("v1.37.2", "kubelet.exe", kubelet)
	srv.Put(p+".sha256", []byte(releasetest.Sum([]byte("a wrong digest"))))
	r := &source.Resolver{CacheDir: t.TempDir()}
	b := source.Binary{Ref: "release:kubernetes", Version: "v1.37.2", Name: "kubelet.exe"}
	if _, err := r.ResolveBinary(context.Background(), b, nil); !errors.Is(err, source.ErrDigestMismatch) {
		t.Fatalf("a release that does not match its checksum file: %v", err)
	}
	srv.Put(p+".sha256", []byte(releasetest.Sum(kubelet)))
	f, err := r.ResolveBinary(context.Background(), b, nil)
	if err != nil || f.SHA256 != releasetest.Sum(kubelet) {
		t.Fatalf("after the mirror fixed its checksum file: %+v, %v", f, err)
	}
}

// An archive without the binary is named in a bounded error, however
// many files it holds.
func TestArchiveErrorBounded(t *testing.T) {
	members := map[string][]byte{}
	for i := range 5000 {
		members[fmt.Sprintf("file-%05d.txt", i)] = nil
	}
	local := filepath.Join(t.TempDir(), "many.tar.gz")
	if err := os.WriteFile(local, releasetest.Archive(members), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &source.Resolver{CacheDir: t.TempDir()}
	_, err := r.ResolveBinary(context.Background(), source.Binary{Ref: local, Name: "kubelet.exe"}, nil)
	if err == nil || len(err.Error()) > 2048 || !strings.Contains(err.Error(), "it holds 5000 files, among them file-00000.txt, file-00001.txt") {
		t.Errorf("error of %d bytes: %.300v", len(fmt.Sprint(err)), err)
	}
}
