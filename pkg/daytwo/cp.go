package daytwo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
)

// Copy directions (CopyReport.Direction).
const (
	ToNode   = "to-node"
	FromNode = "from-node"
)

// CopyOptions are Copy's hooks.
type CopyOptions struct {
	// Transfer is told when a file starts to move (its path on the
	// receiving side and size) and returns where to report the bytes
	// moved so far and the end; nil shows nothing.
	Transfer func(path string, size int64) (update func(done int64), end func())
	// Warn receives what the user must see (about the connection, a
	// skipped special file), naming the node.
	Warn func(msg string)
	// Limits bound a copy from the node; zero fields take the defaults.
	Limits CopyLimits
}

// CopiedFile is one file Copy wrote.
type CopiedFile struct {
	// Path is where it was written (on the node: a Windows path, or one
	// with slashes when the destination was given with slashes).
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// CopyReport is what Copy did.
type CopyReport struct {
	Node string `json:"node"`
	// Direction is to-node or from-node.
	Direction   string `json:"direction"`
	Source      string `json:"source"`
	Destination string `json:"destination"`
	// Files are the files written, in the order they were; Dirs counts
	// the directories created.
	Files []CopiedFile `json:"files"`
	Dirs  int          `json:"dirs"`
	Bytes int64        `json:"bytes"`
	// DurationMs is the whole copy's, connecting included.
	DurationMs int64 `json:"durationMs"`
}

// Copy copies src to dst, one of them on the node spec (toNode says
// which), as `scp -r` and `cp -r` do: a file goes into dst when dst is an
// existing directory, else becomes dst; a directory goes, with everything
// in it, into dst when dst is an existing directory, else becomes dst.
// The parent of dst must exist. Files arrive under a temporary name and
// are renamed into place once complete, so a file at dst is never half
// written. Paths on the node are Windows paths (C:\k\kubelet.log); a
// relative one is relative to the login user's home directory. A path
// written with slashes (C:/k, /srv/k) gets its names joined with slashes.
//
// A missing source, or a destination whose parent is missing, is an error
// naming the path and the side (here or on the node) before anything is
// copied.
func Copy(ctx context.Context, spec *v1alpha1.Node, connect fleet.Connector, src, dst string, toNode bool, opts CopyOptions) (*CopyReport, error) {
	start := time.Now()
	warn := func(msg string) { opts.Warn("node " + spec.Name + ": " + msg) }
	rep := &CopyReport{Node: spec.Name, Direction: FromNode, Source: src, Destination: dst, Files: []CopiedFile{}}
	if toNode {
		rep.Direction = ToNode
	}
	if toNode {
		if _, err := os.Stat(src); err != nil {
			return rep, exitcode.WithCode(exitcode.Usage, fmt.Errorf("%s: %w (on this machine; nothing was copied)", src, notExist(err)))
		}
	}
	n, err := connect(ctx, spec, warn)
	if err != nil {
		return rep, fmt.Errorf("node %s: %w", spec.Name, err)
	}
	defer n.Close()
	c := &copier{ctx: ctx, n: n, spec: spec, rep: rep, opts: opts, warn: warn, limits: opts.Limits.orDefault()}
	if toNode {
		err = c.toNode(src, dst)
	} else {
		err = c.fromNode(src, dst)
	}
	rep.DurationMs = time.Since(start).Milliseconds()
	if err != nil {
		return rep, fmt.Errorf("node %s: %w", spec.Name, err)
	}
	return rep, nil
}

// notExist says "no such file or directory" for a missing path, and the
// error as it is otherwise.
func notExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("no such file or directory")
	}
	return err
}

type copier struct {
	ctx  context.Context
	n    *node.Node
	spec *v1alpha1.Node
	// arch is the node's architecture, once a program was checked.
	arch string
	rep  *CopyReport
	opts CopyOptions
	warn func(string)
	// limits bound a copy from the node; entries counts what it created.
	limits  CopyLimits
	entries int
}

// toNode copies the local src to dst on the node.
func (c *copier) toNode(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return fmt.Errorf("%s: %w (on this machine)", src, notExist(err))
	}
	target, err := c.remoteTarget(dst, filepath.Base(filepath.Clean(src)), fi.IsDir())
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return c.uploadDir(src, target)
	}
	return c.upload(src, fi.Size(), target)
}

// remoteTarget is where a source called base goes for dst on the node.
func (c *copier) remoteTarget(dst, base string, srcIsDir bool) (string, error) {
	fi, err := c.n.Stat(c.ctx, dst)
	switch {
	case err == nil && fi.IsDir():
		return winpath.Join(dst, base), nil
	case err == nil && srcIsDir:
		return "", exitcode.WithCode(exitcode.Usage, fmt.Errorf("%s is a file on the node: a directory cannot be copied onto it", dst))
	case err == nil:
		return dst, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	parent := winpath.Dir(dst)
	if parent == "" {
		return dst, nil
	}
	if pfi, perr := c.n.Stat(c.ctx, parent); perr != nil || !pfi.IsDir() {
		return "", exitcode.WithCode(exitcode.Usage, fmt.Errorf("%s: the directory %s does not exist on the node (create it first, or copy into an existing directory)", dst, parent))
	}
	return dst, nil
}

func (c *copier) uploadDir(src, dst string) error {
	if err := c.n.MkdirAll(c.ctx, dst); err != nil {
		return err
	}
	c.rep.Dirs++
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("read %s (on this machine): %w", src, err)
	}
	for _, e := range entries {
		p := filepath.Join(src, e.Name())
		fi, err := os.Stat(p) // a link to a file sends the file
		if err != nil {
			return fmt.Errorf("%s (on this machine): %w", p, err)
		}
		switch {
		case fi.IsDir() && e.Type()&fs.ModeSymlink != 0:
			// A link to a folder may lead back up the tree.
			c.warn(fmt.Sprintf("skipped %s: a link to a folder", p))
		case fi.IsDir():
			err = c.uploadDir(p, winpath.Join(dst, e.Name()))
		case fi.Mode().IsRegular():
			err = c.upload(p, fi.Size(), winpath.Join(dst, e.Name()))
		default:
			c.warn(fmt.Sprintf("skipped %s: not a file or directory (%s)", p, fi.Mode().Type()))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *copier) upload(src string, size int64, dst string) error {
	if err := c.checkProgram(src, dst); err != nil {
		return err
	}
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("%s (on this machine): %w", src, err)
	}
	defer f.Close()
	update, end := c.transfer(dst, size)
	defer end()
	if err := c.n.Upload(c.ctx, f, size, dst, update); err != nil {
		return err
	}
	c.done(dst, size)
	return nil
}

// fromNode copies src on the node to the local dst.
func (c *copier) fromNode(src, dst string) error {
	fi, err := c.n.Stat(c.ctx, src)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return exitcode.WithCode(exitcode.Usage, fmt.Errorf("%s: no such file or directory on the node; nothing was copied", src))
		}
		return err
	}
	target, err := localTarget(dst, winpath.Base(src), fi.IsDir())
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return c.downloadDir(src, target, 0)
	}
	return c.download(src, fi.Size(), target)
}

// localTarget is where a source called base goes for the local dst.
func localTarget(dst, base string, srcIsDir bool) (string, error) {
	fi, err := os.Stat(dst)
	switch {
	case err == nil && fi.IsDir():
		return filepath.Join(dst, base), nil
	case err == nil && srcIsDir:
		return "", exitcode.WithCode(exitcode.Usage, fmt.Errorf("%s is a file on this machine: a directory cannot be copied onto it", dst))
	case err == nil:
		return dst, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s (on this machine): %w", dst, err)
	}
	parent := filepath.Dir(filepath.Clean(dst))
	if pfi, perr := os.Stat(parent); perr != nil || !pfi.IsDir() {
		return "", exitcode.WithCode(exitcode.Usage, fmt.Errorf("%s: the directory %s does not exist on this machine (create it first, or copy into an existing directory)", dst, parent))
	}
	return dst, nil
}

// downloadDir copies the node's folder src, depth folders below the one
// copied, into the local dst.
func (c *copier) downloadDir(src, dst string, depth int) error {
	if depth > c.limits.Depth {
		return &LimitError{What: "folder levels", Limit: int64(c.limits.Depth), Flag: "--max-depth", Path: src}
	}
	if err := c.count(src); err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("create %s (on this machine): %w", dst, err)
	}
	c.rep.Dirs++
	entries, err := c.n.ReadDir(c.ctx, src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == "." || e.Name() == ".." {
			continue
		}
		if err := checkName(src, e.Name()); err != nil {
			return err
		}
		p := winpath.Join(src, e.Name())
		switch {
		case e.IsDir():
			err = c.downloadDir(p, filepath.Join(dst, e.Name()), depth+1)
		case e.Mode().IsRegular():
			if err = c.count(p); err == nil {
				err = c.download(p, e.Size(), filepath.Join(dst, e.Name()))
			}
		default:
			c.warn(fmt.Sprintf("skipped %s: not a file or directory (%s)", p, e.Mode().Type()))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// download fetches src into a temporary file next to dst and renames it
// onto dst once complete.
func (c *copier) download(src string, size int64, dst string) error {
	tmp, err := createPart(dst)
	if err != nil {
		return fmt.Errorf("create a file next to %s (on this machine): %w", dst, err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing to remove
	update, end := c.transfer(dst, size)
	w := &progressWriter{w: tmp, update: update, max: c.limits.Bytes - c.rep.Bytes, limit: func() error {
		return &LimitError{What: "bytes", Limit: c.limits.Bytes, Flag: "--max-bytes", Path: src}
	}}
	err = c.n.Download(c.ctx, src, w)
	end()
	if cerr := tmp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write %s (on this machine): %w", tmp.Name(), cerr)
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("write %s (on this machine): %w", dst, err)
	}
	c.done(dst, w.n)
	return nil
}

func (c *copier) transfer(path string, size int64) (update func(int64), end func()) {
	if c.opts.Transfer == nil {
		return func(int64) {}, func() {}
	}
	return c.opts.Transfer(path, size)
}

func (c *copier) done(path string, size int64) {
	c.rep.Files = append(c.rep.Files, CopiedFile{Path: path, Size: size})
	c.rep.Bytes += size
}

// createPart creates a new file beside dst to download into, under a
// name of its own, with the mode a new file gets from this machine's
// umask (0644 under umask 022, as scp gives), not os.CreateTemp's 0600.
func createPart(dst string) (*os.File, error) {
	for {
		var rnd [6]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return nil, err
		}
		name := filepath.Join(filepath.Dir(dst), ops.PartPath("."+filepath.Base(dst))+"-"+hex.EncodeToString(rnd[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
}

// count records one more file or folder created for the node's path p,
// failing past the entries limit.
func (c *copier) count(p string) error {
	if c.entries++; c.entries > c.limits.Entries {
		return &LimitError{What: "files and folders", Limit: int64(c.limits.Entries), Flag: "--max-entries", Path: p}
	}
	return nil
}

// progressWriter counts what it writes and reports it; with limit set,
// it refuses to write past max bytes (a node may send more than it
// listed).
type progressWriter struct {
	w      io.Writer
	n      int64
	update func(int64)
	max    int64
	limit  func() error
}

func (p *progressWriter) Write(b []byte) (int, error) {
	if p.limit != nil && p.n+int64(len(b)) > p.max {
		return 0, p.limit()
	}
	n, err := p.w.Write(b)
	p.n += int64(n)
	p.update(p.n)
	return n, err
}
