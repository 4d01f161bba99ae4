package source

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/swdt/pkg/redact"
)

// extract takes the member called name out of the archive a (a gzipped
// tar) into the cache, keyed by the archive's digest, and resolves it as
// a local file. The member is bin/<name> (containerd's layout) or <name>
// at the archive's top (the CNI plugins'); names compare without case,
// as Windows compares them.
func (r *Resolver) extract(a *File, name string) (*File, error) {
	shown := redact.URLs(a.Ref)
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return nil, fmt.Errorf("archive %s: %q is not a binary's file name (the destination's file name picks the member)", shown, name)
	}
	dir, err := r.cacheDir()
	if err != nil {
		return nil, err
	}
	dir = filepath.Join(dir, "extracted", a.SHA256)
	out := filepath.Join(dir, strings.ToLower(name))
	if _, err := os.Stat(out); err == nil {
		return r.local(out, out, out)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the extraction cache %s: %w", dir, err)
	}
	fh, err := a.Open()
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	gz, err := gzip.NewReader(fh)
	if err != nil {
		return nil, fmt.Errorf("archive %s is not a gzipped tar: %w", shown, err)
	}
	tr := tar.NewReader(gz)
	var members []string
	count := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("archive %s: read: %w", shown, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		member := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if count++; len(members) < maxListedMembers*100 {
			members = append(members, member)
		}
		if !strings.EqualFold(member, name) && !strings.EqualFold(member, "bin/"+name) {
			continue
		}
		if h.Size > r.maxDownloadSize() {
			return nil, fmt.Errorf("archive %s: %s is %s: %w (the cap is %s)", shown, member, sizeText(h.Size), ErrTooLarge, sizeText(r.maxDownloadSize()))
		}
		if err := writeMember(dir, out, tr, h.Size); err != nil {
			return nil, fmt.Errorf("archive %s: extract %s: %w", shown, member, err)
		}
		return r.local(out, out, out)
	}
	slices.Sort(members)
	held := strings.Join(members[:min(len(members), maxListedMembers)], ", ")
	if count > maxListedMembers {
		held = fmt.Sprintf("%d files, among them %s", count, held)
	}
	return nil, fmt.Errorf("archive %s has no %s (looked for bin/%s and %s at its top; it holds %s): fix the destination's file name or the source",
		shown, name, name, name, held)
}

// maxListedMembers is how many of an archive's files an error names: an
// archive may hold hundreds of thousands.
const maxListedMembers = 20

// writeMember writes size bytes of body to out through a temporary file
// in dir, so that an interrupted extraction leaves nothing at out.
func writeMember(dir, out string, body io.Reader, size int64) error {
	tmp, err := os.CreateTemp(dir, "partial-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	n, err := io.Copy(tmp, io.LimitReader(body, size))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return err
	case n != size:
		return fmt.Errorf("the archive ends after %d of %d bytes", n, size)
	}
	return os.Rename(tmp.Name(), out)
}
