package source

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"sigs.k8s.io/swdt/pkg/redact"
)

// A sourceURL of the form release:KIND takes a binary from an official
// release: the provisioner's version says which, the destination's file
// name says which binary, and the digest comes from the release's own
// checksum file (DESIGN.md §4.1).
const ReleaseScheme = "release"

// The releases a sourceURL may name.
const (
	// ReleaseKubernetes is dl.k8s.io: <base>/<version>/bin/windows/amd64/<name>
	// with <name>.sha256 beside it (the bare hex digest).
	ReleaseKubernetes = "kubernetes"
	// ReleaseContainerd is containerd's GitHub release archive,
	// containerd-<version>-windows-amd64.tar.gz with .sha256sum beside it;
	// the binary is bin/<name> in it.
	ReleaseContainerd = "containerd"
	// ReleaseCNI is the CNI plugins' GitHub release archive,
	// cni-plugins-windows-amd64-v<version>.tgz with .sha256 beside it;
	// the binary is <name> at its top.
	ReleaseCNI = "cni"
	// ReleaseWins is rancher/wins' GitHub release: v<version>/wins.exe,
	// with sha256.txt (sha256sum's lines) beside it from v0.4.16 on;
	// an older release needs the digest in the node file.
	ReleaseWins = "wins"
)

// winsChecksumsSince is the first rancher/wins release that publishes
// sha256.txt.
var winsChecksumsSince = version.MustParseSemantic("0.4.16")

// ReleaseKinds lists the releases a sourceURL may name, in a fixed order.
func ReleaseKinds() []string {
	return []string{ReleaseKubernetes, ReleaseContainerd, ReleaseCNI, ReleaseWins}
}

// releaseBase is where a release is published and the environment
// variable that replaces it (an air-gapped mirror with the same layout).
var releaseBase = map[string]struct{ url, env string }{
	ReleaseKubernetes: {"https://dl.k8s.io/release", "SWDT_KUBERNETES_RELEASE_URL"},
	ReleaseContainerd: {"https://github.com/containerd/containerd/releases/download", "SWDT_CONTAINERD_RELEASE_URL"},
	ReleaseCNI:        {"https://github.com/containernetworking/plugins/releases/download", "SWDT_CNI_RELEASE_URL"},
	ReleaseWins:       {"https://github.com/rancher/wins/releases/download", "SWDT_WINS_RELEASE_URL"},
}

// ReleaseMirrorEnv is the environment variable that replaces a release's
// base URL ("" for an unknown kind).
func ReleaseMirrorEnv(kind string) string { return releaseBase[kind].env }

// ReleaseKind returns KIND when ref is release:KIND (of any case).
func ReleaseKind(ref string) (string, bool) {
	scheme, kind, ok := strings.Cut(ref, ":")
	if !ok || !strings.EqualFold(scheme, ReleaseScheme) {
		return "", false
	}
	return strings.ToLower(kind), true
}

// IsArchive reports whether ref (a path or URL) names a gzipped tar
// archive (.tar.gz or .tgz), from which a binary is taken by name.
func IsArchive(ref string) bool {
	p := ref
	if u, err := url.Parse(ref); err == nil && len(u.Scheme) > 1 {
		p = u.Path
	}
	p = strings.ToLower(p)
	return strings.HasSuffix(p, ".tar.gz") || strings.HasSuffix(p, ".tgz")
}

// Binary says where one binary comes from: what a provisioner's
// sourceURL, sha256, version and destination make of it.
type Binary struct {
	// Ref is the sourceURL: a local path, file://, http(s)://, or
	// release:KIND. A ref naming a .tar.gz or .tgz archive yields the
	// member called Name.
	Ref string
	// SHA256 is the expected digest of what Ref names (the archive, for
	// an archive); "" when not given. For a release it must agree with
	// the release's checksum file.
	SHA256 string
	// Version is the release's version (release:KIND only).
	Version string
	// Name is the binary's file name (the destination's), as a release
	// and an archive name it.
	Name string
}

// Key identifies the binary: binaries with equal keys share one
// resolution.
func (b Binary) Key() string {
	k := b.Ref + "\x00" + strings.ToLower(b.SHA256)
	if _, ok := ReleaseKind(b.Ref); ok || b.Archived() {
		k += "\x00" + b.Version + "\x00" + strings.ToLower(b.Name)
	}
	return k
}

// WinsChecksums reports whether rancher/wins release v publishes a
// checksum file (an unparsable version is assumed to).
func WinsChecksums(v string) bool {
	sv, err := version.ParseSemantic(strings.TrimPrefix(strings.TrimSpace(v), "v"))
	return err != nil || sv.AtLeast(winsChecksumsSince)
}

// Archived reports whether the binary is taken out of an archive (a
// .tar.gz or .tgz source, release:containerd, release:cni): SHA256 is
// then the archive's digest, not the binary's.
func (b Binary) Archived() bool {
	kind, ok := ReleaseKind(b.Ref)
	return IsArchive(b.Ref) || ok && kind != ReleaseKubernetes
}

// ReleaseURLs returns the URL of a release's file (the binary, or the
// archive holding it) and of its checksum file.
func ReleaseURLs(kind, version, name string) (file, sum string, err error) {
	base, ok := releaseBase[kind]
	if !ok {
		return "", "", fmt.Errorf("release:%s: unknown release (use %s)", kind, strings.Join(prefixed(ReleaseKinds()), ", "))
	}
	v := strings.TrimPrefix(strings.TrimSpace(version), "v")
	if v == "" {
		return "", "", fmt.Errorf("release:%s needs a version, for example %s", kind, map[string]string{
			ReleaseKubernetes: "v1.37.2", ReleaseContainerd: "2.1.4", ReleaseCNI: "1.6.2", ReleaseWins: "v0.15.0"}[kind])
	}
	if strings.ContainsAny(v, "/?#% \\") {
		return "", "", fmt.Errorf("release:%s: version %q is not a release version", kind, version)
	}
	root := strings.TrimRight(base.url, "/")
	if env := strings.TrimSpace(os.Getenv(base.env)); env != "" {
		root = strings.TrimRight(env, "/")
	}
	switch kind {
	case ReleaseKubernetes:
		if name == "" || strings.ContainsAny(name, `/\`) {
			return "", "", fmt.Errorf("release:%s: %q is not a binary's file name", kind, name)
		}
		file = root + "/v" + v + "/bin/windows/amd64/" + name
		return file, file + ".sha256", nil
	case ReleaseContainerd:
		file = root + "/v" + v + "/containerd-" + v + "-windows-amd64.tar.gz"
		return file, file + ".sha256sum", nil
	case ReleaseWins:
		if !WinsChecksums(v) {
			return root + "/v" + v + "/wins.exe", "", nil
		}
		return root + "/v" + v + "/wins.exe", root + "/v" + v + "/sha256.txt", nil
	default:
		file = root + "/v" + v + "/cni-plugins-windows-amd64-v" + v + ".tgz"
		return file, file + ".sha256", nil
	}
}

func prefixed(kinds []string) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = ReleaseScheme + ":" + k
	}
	return out
}

// ResolveBinary turns b into a local file: a release is located and its
// digest read from its checksum file, downloaded and verified; an
// archive's member is extracted into the cache (once per archive
// digest). Anything else is Resolve. progress may be nil.
func (r *Resolver) ResolveBinary(ctx context.Context, b Binary, progress Progress) (*File, error) {
	kind, ok := ReleaseKind(b.Ref)
	if !ok {
		return r.resolveFile(ctx, b.Ref, strings.ToLower(strings.TrimSpace(b.SHA256)), b.Name, progress)
	}
	file, sumURL, err := ReleaseURLs(kind, b.Version, b.Name)
	if err != nil {
		return nil, err
	}
	if sumURL == "" {
		// A release without a checksum file: the node file's digest is
		// the only check there is.
		want := strings.ToLower(strings.TrimSpace(b.SHA256))
		if want == "" {
			return nil, fmt.Errorf("release:%s %s publishes no checksum file: set the digest of its %s in sha256", kind, b.Version, path.Base(file))
		}
		return r.resolveFile(ctx, file, want, b.Name, progress)
	}
	f, err := r.resolveRelease(ctx, b, kind, file, sumURL, false, progress)
	if errors.Is(err, errStaleChecksum) {
		// The cached checksum file may be what is wrong (a mirror that
		// fixed it since): read it again once.
		f, err = r.resolveRelease(ctx, b, kind, file, sumURL, true, progress)
	}
	return f, err
}

// errStaleChecksum marks a digest mismatch against a checksum file that
// came from the cache.
var errStaleChecksum = errors.New("checksum file from the cache")

// resolveRelease resolves the release file (sumURL's digest) and the
// binary in it; fresh reads the checksum file from the server even when
// it is in the cache.
func (r *Resolver) resolveRelease(ctx context.Context, b Binary, kind, file, sumURL string, fresh bool, progress Progress) (*File, error) {
	sum, cached, err := r.releaseChecksum(ctx, kind, sumURL, path.Base(file), fresh)
	if err != nil {
		return nil, err
	}
	if want := strings.ToLower(strings.TrimSpace(b.SHA256)); want != "" && want != sum {
		return nil, fmt.Errorf("release:%s %s: %w: sha256 in the config is %s, the release's checksum file %s says %s; fix sha256 or remove it",
			kind, b.Version, ErrDigestMismatch, want, redact.URLs(sumURL), sum)
	}
	f, err := r.resolveFile(ctx, file, sum, b.Name, progress)
	if cached && errors.Is(err, ErrDigestMismatch) {
		return nil, fmt.Errorf("%w: %w", errStaleChecksum, err)
	}
	return f, err
}

// resolveFile resolves ref, checked against want, and takes the binary
// called name out of it when it is an archive.
func (r *Resolver) resolveFile(ctx context.Context, ref, want, name string, progress Progress) (*File, error) {
	if !IsArchive(ref) {
		return r.Resolve(ctx, ref, want, progress)
	}
	a, err := r.Resolve(ctx, ref, want, progress)
	if err != nil {
		return nil, err
	}
	f, err := r.extract(a, name)
	if err != nil {
		return nil, err
	}
	f.Ref, f.Downloaded = a.Ref, a.Downloaded
	return f, nil
}

// checksumMax bounds a checksum file: one line per file of a release.
const checksumMax = 64 << 10

// releaseChecksum reads the digest of the file called name from a
// release's checksum file: a bare hex digest, or sha256sum's lines
// ("<hex>  <name>", "<hex> *<name>"). A release does not change once
// published, so a checksum file in the cache is used without asking the
// server again: a second run needs no network.
func (r *Resolver) releaseChecksum(ctx context.Context, kind, sumURL, name string, fresh bool) (sum string, cached bool, err error) {
	shown := redact.URLs(sumURL)
	hint := fmt.Sprintf("check the version, and %s when it names a mirror", releaseBase[kind].env)
	var f *File
	if !fresh {
		f, cached = r.cachedDownload(sumURL)
	}
	if !cached {
		if f, err = r.Resolve(ctx, sumURL, "", nil); err != nil {
			return "", false, fmt.Errorf("release:%s: read the release's checksum file: %w; %s", kind, err, hint)
		}
	}
	sum, err = readChecksum(f, kind, shown, name, hint)
	return sum, cached, err
}

// readChecksum finds the digest of name in the checksum file f.
func readChecksum(f *File, kind, shown, name, hint string) (string, error) {
	fh, err := f.Open()
	if err != nil {
		return "", err
	}
	defer fh.Close()
	raw, err := io.ReadAll(io.LimitReader(fh, checksumMax+1))
	if err != nil {
		return "", fmt.Errorf("release:%s: read %s: %w", kind, shown, err)
	}
	if len(raw) > checksumMax {
		return "", fmt.Errorf("release:%s: %s is larger than a checksum file (%s)", kind, shown, sizeText(checksumMax))
	}
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		sum := strings.ToLower(fields[0])
		if b, err := hex.DecodeString(sum); err != nil || len(b) != 32 {
			continue
		}
		if len(fields) == 1 || path.Base(strings.TrimPrefix(fields[1], "*")) == name {
			return sum, nil
		}
	}
	return "", fmt.Errorf("release:%s: %s holds no SHA-256 digest of %s; %s", kind, shown, name, hint)
}
