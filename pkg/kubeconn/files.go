package kubeconn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/kubeconn/filescript"
	"sigs.k8s.io/swdt/pkg/ops"
)

// The file calls of node.Conn, each one exec of filescript's script: the
// request as a JSON line on stdin, a write's bytes after it, the reply as
// a JSON line on stdout, a read's bytes after it.

// maxReplyLine bounds the reply line (a directory's listing).
const maxReplyLine = 16 << 20

// replySplitter takes the first line written to it as the reply and
// passes the rest to rest.
type replySplitter struct {
	line  bytes.Buffer
	done  bool
	rest  io.Writer
	extra error
	// n counts the bytes after the reply.
	n int64
}

func (w *replySplitter) Write(p []byte) (int, error) {
	n := len(p)
	if !w.done {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if w.line.Len()+len(p) > maxReplyLine {
				return 0, errors.New("the file script's reply line is too long")
			}
			w.line.Write(p)
			return n, nil
		}
		w.line.Write(p[:i])
		w.done = true
		p = p[i+1:]
	}
	if len(p) > 0 {
		if w.rest == nil {
			w.extra = errors.New("the file script wrote more than its reply")
			return n, nil
		}
		if _, err := w.rest.Write(p); err != nil {
			return 0, err
		}
		w.n += int64(len(p))
	}
	return n, nil
}

// fileRetry is how a file call whose stream was lost is tried again:
// every call may be (a write starts again from its first byte, a read is
// reread), which the SFTP path gets from its reconnect.
var fileRetry = retry.Policy{Tries: 3, Pause: 100 * time.Millisecond, ShouldRetry: func(err error) bool { return errors.Is(err, ErrStreamLost) }}

// call runs one file call, again when its stream is lost; data opens
// what follows the request (nil: nothing). Nothing may follow the reply
// (Download reads).
func (c *Conn) call(ctx context.Context, req filescript.Request, data func() (io.Reader, error)) (filescript.Reply, error) {
	var r filescript.Reply
	err := fileRetry.Do(ctx, func(ctx context.Context, try int) error {
		var in io.Reader
		if data != nil {
			d, err := data()
			if err != nil {
				return err
			}
			in = d
		}
		var err error
		r, err = c.callOnce(ctx, req, in, nil)
		if try > 1 && req.Op == filescript.OpRemove && r.Kind == filescript.KindNotFound {
			// The lost try removed it.
			return nil
		}
		return err
	})
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) {
		err = ex.Err
	}
	return r, err
}

// callOnce runs one file call with data after the request (nil: none)
// and what follows the reply written to out (nil: nothing may follow).
func (c *Conn) callOnce(ctx context.Context, req filescript.Request, data io.Reader, out io.Writer) (filescript.Reply, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return filescript.Reply{}, err
	}
	var stdin io.Reader = bytes.NewReader(append(line, '\n'))
	if data != nil {
		stdin = io.MultiReader(stdin, data)
	}
	w := &replySplitter{rest: out}
	var stderr bytes.Buffer
	status, err := c.run(ctx, filescript.Argv(), stdin, w, &limitedBuffer{b: &stderr, n: 4096})
	if err != nil {
		return filescript.Reply{}, fmt.Errorf("%s %s: %w", req.Op, req.Path, err)
	}
	var r filescript.Reply
	if !w.done && status == 0 {
		// No status and no reply: the stream dropped (Exec).
		return r, fmt.Errorf("%s %s on node %s: %w (it ended with no status and no reply)", req.Op, req.Path, c.opts.Node, ErrStreamLost)
	}
	if !w.done || json.Unmarshal(w.line.Bytes(), &r) != nil {
		return r, fmt.Errorf("%s %s on node %s: the file script gave no reply (exit status %d): %s", req.Op, req.Path, c.opts.Node, status,
			strings.TrimSpace(stderr.String()))
	}
	if !r.OK {
		return r, replyError(req, r)
	}
	if len(r.Entries) == 1 && req.Op == filescript.OpRead && req.Offset+w.n != r.Entries[0].Size {
		return r, fmt.Errorf("%s %s on node %s: %w (got %d of %d bytes)", req.Op, req.Path, c.opts.Node, ErrStreamLost, req.Offset+w.n, r.Entries[0].Size)
	}
	if status != 0 {
		// The script replied, then failed (a read cut short).
		return r, fmt.Errorf("%s %s on node %s: the file script exited with status %d after its reply: %s", req.Op, req.Path, c.opts.Node, status,
			strings.TrimSpace(stderr.String()))
	}
	if w.extra != nil {
		return r, fmt.Errorf("%s %s on node %s: %w", req.Op, req.Path, c.opts.Node, w.extra)
	}
	return r, nil
}

// replyError is a failed call as io/fs says it: a missing file matches
// fs.ErrNotExist, a denied one fs.ErrPermission.
func replyError(req filescript.Request, r filescript.Reply) error {
	err := errors.New(r.Message)
	switch r.Kind {
	case filescript.KindNotFound:
		err = fmt.Errorf("%s: %w", r.Message, fs.ErrNotExist)
	case filescript.KindAccessDenied:
		err = fmt.Errorf("%s: %w", r.Message, fs.ErrPermission)
	}
	return &fs.PathError{Op: req.Op, Path: req.Path, Err: err}
}

// limitedBuffer keeps the first n bytes written.
type limitedBuffer struct {
	b *bytes.Buffer
	n int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// fileInfo is an Entry as fs.FileInfo.
type fileInfo struct{ e filescript.Entry }

func (f fileInfo) Name() string { return f.e.Name }
func (f fileInfo) Size() int64  { return f.e.Size }
func (f fileInfo) Mode() fs.FileMode {
	if f.e.Dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (f fileInfo) ModTime() time.Time { return time.Unix(0, f.e.Mod) }
func (f fileInfo) IsDir() bool        { return f.e.Dir }
func (f fileInfo) Sys() any           { return nil }

// Stat describes a file; a missing one matches fs.ErrNotExist.
func (c *Conn) Stat(ctx context.Context, remotePath string) (fs.FileInfo, error) {
	r, err := c.call(ctx, filescript.Request{Op: filescript.OpStat, Path: remotePath}, nil)
	if err != nil {
		return nil, err
	}
	if len(r.Entries) != 1 {
		return nil, fmt.Errorf("stat %s on node %s: the file script described %d files", remotePath, c.opts.Node, len(r.Entries))
	}
	return fileInfo{r.Entries[0]}, nil
}

// ReadDir lists a directory.
func (c *Conn) ReadDir(ctx context.Context, remotePath string) ([]fs.FileInfo, error) {
	r, err := c.call(ctx, filescript.Request{Op: filescript.OpReadDir, Path: remotePath}, nil)
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, len(r.Entries))
	for i, e := range r.Entries {
		out[i] = fileInfo{e}
	}
	return out, nil
}

// Remove deletes a file.
func (c *Conn) Remove(ctx context.Context, remotePath string) error {
	_, err := c.call(ctx, filescript.Request{Op: filescript.OpRemove, Path: remotePath}, nil)
	return err
}

// MkdirAll creates a directory and its parents.
func (c *Conn) MkdirAll(ctx context.Context, remotePath string) error {
	_, err := c.call(ctx, filescript.Request{Op: filescript.OpMkdir, Path: remotePath}, nil)
	return err
}

// counter counts the bytes read through it and reports them.
type counter struct {
	r        io.Reader
	mu       sync.Mutex
	n        int64
	progress func(int64)
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.mu.Lock()
	c.n += int64(n)
	sent := c.n
	c.mu.Unlock()
	if n > 0 && c.progress != nil {
		c.progress(sent)
	}
	return n, err
}

func (c *counter) sent() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Upload streams size bytes from src to remotePath through a staged name
// (ops.PartPath), renamed over remotePath once written whole; the
// directory is created first.
func (c *Conn) Upload(ctx context.Context, src io.ReaderAt, size int64, remotePath string, progress func(sent int64)) error {
	if err := c.MkdirAll(ctx, winpath.Dir(remotePath)); err != nil {
		return err
	}
	var in *counter
	open := func() (io.Reader, error) {
		in = &counter{r: io.NewSectionReader(src, 0, size), progress: progress}
		return in, nil
	}
	if _, err := c.call(ctx, filescript.Request{Op: filescript.OpWrite, Path: ops.PartPath(remotePath), To: remotePath}, open); err != nil {
		return fmt.Errorf("upload to %s on node %s: %w", remotePath, c.opts.Node, err)
	}
	if in.sent() != size {
		return fmt.Errorf("upload to %s on node %s: sent %d of %d bytes", remotePath, c.opts.Node, in.sent(), size)
	}
	return nil
}

// UploadStream sends what open returns, up to EOF, to remotePath itself
// and returns the bytes sent.
func (c *Conn) UploadStream(ctx context.Context, open func() (io.ReadCloser, error), remotePath string, progress func(sent int64)) (int64, error) {
	var in *counter
	var last io.Closer
	defer func() {
		if last != nil {
			last.Close()
		}
	}()
	reopen := func() (io.Reader, error) {
		if last != nil {
			last.Close()
		}
		r, err := open()
		if err != nil {
			return nil, err
		}
		last = r
		in = &counter{r: r, progress: progress}
		return in, nil
	}
	if _, err := c.call(ctx, filescript.Request{Op: filescript.OpWrite, Path: remotePath}, reopen); err != nil {
		sent := int64(0)
		if in != nil {
			sent = in.sent()
		}
		return sent, fmt.Errorf("upload to %s on node %s: %w", remotePath, c.opts.Node, err)
	}
	return in.sent(), nil
}

// Download copies a file's content to w, each byte once: a read cut
// short is read again from where it stopped.
func (c *Conn) Download(ctx context.Context, remotePath string, w io.Writer) error {
	cw := &offsetWriter{w: w}
	err := fileRetry.Do(ctx, func(ctx context.Context, _ int) error {
		_, err := c.callOnce(ctx, filescript.Request{Op: filescript.OpRead, Path: remotePath, Offset: cw.n}, nil, cw)
		return err
	})
	var ex *retry.ExhaustedError
	if errors.As(err, &ex) {
		err = ex.Err
	}
	return err
}

// offsetWriter counts what it passes on.
type offsetWriter struct {
	w io.Writer
	n int64
}

func (o *offsetWriter) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	o.n += int64(n)
	return n, err
}
