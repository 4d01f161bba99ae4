package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync/atomic"
	"time"

	"github.com/pkg/sftp"

	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/pkg/ops"
)

var sftpRetry = retry.Policy{
	Tries:       2, // reconnect once
	Pause:       200 * time.Millisecond,
	ShouldRetry: func(err error) bool { return errors.Is(err, ErrConnectionLost) },
}

// idempotent runs an SFTP call that is safe to repeat, reconnecting once
// when the connection drops under it.
func (c *Client) idempotent(ctx context.Context, op string, fn func(ctx context.Context, sc *sftp.Client, attempt int, cn *conn) error) error {
	return withRetry(ctx, op, sftpRetry, func(ctx context.Context, attempt int) error {
		cn, err := c.conn(ctx)
		if err != nil {
			return err
		}
		var sc *sftp.Client
		err = do(ctx, cn, func() error {
			var err error
			sc, err = cn.sftpClient()
			if err != nil {
				return err
			}
			return fn(ctx, sc, attempt, cn)
		})
		if cn.lost(err) {
			c.log.Debug("ssh connection lost, reconnecting", "op", op, "attempt", attempt, "err", err)
			return fmt.Errorf("%w: %w", ErrConnectionLost, err)
		}
		return err
	})
}

// StartSFTP starts the SFTP subsystem on the connection, when it is not
// running yet: calls that need it wait for a start in progress, so a
// caller may start it while it runs an exec.
func (c *Client) StartSFTP(ctx context.Context) error {
	return c.idempotent(ctx, "start sftp on "+c.t.addr, func(context.Context, *sftp.Client, int, *conn) error { return nil })
}

// Upload streams size bytes of src to remotePath. The bytes go to
// remotePath+".swdt-part" first, which is renamed onto remotePath once
// complete (an existing remotePath is replaced), so remotePath never holds
// a partial file. Writes are pipelined; memory use does not grow with size.
// progress (may be nil) gets the bytes sent so far; after a reconnect the
// upload restarts from zero and so does the count.
func (c *Client) Upload(ctx context.Context, src io.ReaderAt, size int64, remotePath string, progress func(sent int64)) error {
	dst := SFTPPath(remotePath)
	part := ops.PartPath(dst)
	op := fmt.Sprintf("upload %s to %s", remotePath, c.t.addr)
	return c.idempotent(ctx, op, func(ctx context.Context, sc *sftp.Client, attempt int, cn *conn) error {
		if attempt > 1 && progress != nil {
			progress(0)
		}
		f, err := sc.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
		if err != nil {
			return fmt.Errorf("%s: create %s: %w", op, part, err)
		}
		r := &uploadReader{ctx: ctx, src: io.NewSectionReader(src, 0, size), size: size, progress: progress}
		stalled := watchStall(c.stallTimeout(), r, func() {
			// Dropping the socket fails the pending writes at once; a
			// graceful close would wait on the link that stopped.
			cn.kill(fmt.Errorf("upload made no progress for %s", c.stallTimeout()))
		})
		n, err := f.ReadFrom(r)
		if stalled() {
			// The connection is then treated as lost: a new one, a new try.
			err = fmt.Errorf("no progress for %s: %w", c.stallTimeout(), sftp.ErrSSHFxConnectionLost)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && n != size {
			err = fmt.Errorf("source ended after %d of %d bytes", n, size)
		}
		if err == nil {
			err = replace(ctx, sc, part, dst)
		}
		if err != nil {
			if !errors.Is(err, sftp.ErrSSHFxConnectionLost) {
				_ = sc.Remove(part) // best effort; a leftover part file is harmless
			}
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
}

// UploadsExact marks that Upload puts exactly the bytes given on the node
// (node.ExactUploader): SFTP writes what arrives, and SSH's MAC checks
// every byte on its way.
func (c *Client) UploadsExact() {}

// uploadReader feeds an upload, stopping at ctx's end and reporting
// progress. Size lets sftp pipeline the writes.
type uploadReader struct {
	ctx      context.Context
	src      io.Reader
	size     int64
	sent     atomic.Int64
	progress func(int64)
}

func (r *uploadReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := r.src.Read(p)
	if n > 0 {
		sent := r.sent.Add(int64(n))
		if r.progress != nil {
			r.progress(sent)
		}
	}
	return n, err
}

func (c *Client) stallTimeout() time.Duration {
	if c.cfg.StallTimeout > 0 {
		return c.cfg.StallTimeout
	}
	return DefaultStallTimeout
}

// watchStall calls abandon once when r has read nothing new for timeout;
// pipelined writes read ahead only as the server acknowledges, so a
// transfer that stopped moving stops reading. The returned function stops
// the watch and reports whether it fired.
func watchStall(timeout time.Duration, r *uploadReader, abandon func()) (stopAndReport func() bool) {
	var fired atomic.Bool
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(timeout / 4)
		defer tick.Stop()
		last, since := r.sent.Load(), time.Now()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if now := r.sent.Load(); now != last {
					last, since = now, time.Now()
				} else if time.Since(since) >= timeout {
					fired.Store(true)
					abandon()
					return
				}
			}
		}
	}()
	return func() bool {
		close(done)
		return fired.Load()
	}
}

func (r *uploadReader) Size() int64 { return r.size }

// replaceBusy is how replace tries again while a file is busy: for the
// busy-file rule's time, as the agent does on the node.
var replaceBusy = retry.Policy{Budget: ops.BusyFileWait, Pause: 100 * time.Millisecond, ShouldRetry: sftpRefused}

// replace renames oldPath onto newPath, replacing newPath. A fresh
// executable is busy on Windows for a moment (a virus scanner opens it
// without sharing delete access, and the rename fails): it is tried again
// (replaceBusy).
func replace(ctx context.Context, sc *sftp.Client, oldPath, newPath string) error {
	return withRetry(ctx, "rename "+oldPath, replaceBusy, func(context.Context, int) error { return replaceOnce(sc, oldPath, newPath) })
}

// sftpRefused reports whether the server refused an SFTP request (what a
// busy file gives; a lost connection is not that).
func sftpRefused(err error) bool {
	var st *sftp.StatusError
	return errors.As(err, &st) && (st.FxCode() == sftp.ErrSSHFxFailure || st.FxCode() == sftp.ErrSSHFxPermissionDenied)
}

// replaceOnce is one try of replace. Plain SFTP rename refuses an
// existing target, so it uses posix-rename when offered and otherwise
// removes the target first.
func replaceOnce(sc *sftp.Client, oldPath, newPath string) error {
	if _, ok := sc.HasExtension("posix-rename@openssh.com"); ok {
		if err := sc.PosixRename(oldPath, newPath); err == nil {
			return nil
		}
	}
	err := sc.Rename(oldPath, newPath)
	if err == nil {
		return nil
	}
	if _, serr := sc.Stat(newPath); serr != nil {
		return fmt.Errorf("rename %s to %s: %w", oldPath, newPath, err)
	}
	if rerr := sc.Remove(newPath); rerr != nil {
		return fmt.Errorf("rename %s to %s: cannot remove the existing target: %w", oldPath, newPath, rerr)
	}
	if err := sc.Rename(oldPath, newPath); err != nil {
		return fmt.Errorf("rename %s to %s: %w", oldPath, newPath, err)
	}
	return nil
}

// Download copies remotePath to w. After a dropped connection it resumes
// where it stopped, so w sees every byte exactly once. It keeps 2 MiB
// asked for at a time (64 reads of 32 KiB, as OpenSSH's sftp).
func (c *Client) Download(ctx context.Context, remotePath string, w io.Writer) error {
	return c.download(ctx, remotePath, w, 0)
}

// leanInFlight is what DownloadLean asks for at a time.
const leanInFlight = 512 << 10

// DownloadLean is Download with a quarter as much asked for at a time
// (512 KiB): for a read-back where the process's memory counts more than
// the time, the agent's check on a first contact from a new cache. With
// Download's 2 MiB in flight that check took 6 MiB more of swdt's peak
// RSS (41 against 35 MiB); it costs no time on links of 100 Mbit/s and
// 20 ms or 20 Mbit/s and 60 ms, and on one of 200 ms reads about 2.6 MB/s.
func (c *Client) DownloadLean(ctx context.Context, remotePath string, w io.Writer) error {
	return c.download(ctx, remotePath, w, leanInFlight)
}

// download is Download with inFlight bytes asked for at a time (0: the
// SFTP client's most).
func (c *Client) download(ctx context.Context, remotePath string, w io.Writer, inFlight int) error {
	p := SFTPPath(remotePath)
	op := fmt.Sprintf("download %s from %s", remotePath, c.t.addr)
	cw := &countingWriter{w: w}
	return c.idempotent(ctx, op, func(ctx context.Context, sc *sftp.Client, attempt int, cn *conn) error {
		f, err := sc.Open(p)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		defer f.Close()
		if cw.n > 0 {
			if _, err := f.Seek(cw.n, io.SeekStart); err != nil {
				return fmt.Errorf("%s: %w", op, err)
			}
		}
		cw.ctx = ctx
		if inFlight == 0 {
			_, err = f.WriteTo(cw)
		} else {
			// A read of inFlight bytes asks for them at once; the file
			// is hidden behind a plain reader so that the copy reads.
			_, err = io.CopyBuffer(cw, struct{ io.Reader }{f}, make([]byte, inFlight))
		}
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
}

type countingWriter struct {
	ctx context.Context
	w   io.Writer
	n   int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// Stat describes remotePath. A missing path matches fs.ErrNotExist.
func (c *Client) Stat(ctx context.Context, remotePath string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	op := fmt.Sprintf("stat %s on %s", remotePath, c.t.addr)
	err := c.idempotent(ctx, op, func(ctx context.Context, sc *sftp.Client, attempt int, cn *conn) error {
		var err error
		fi, err = sc.Stat(SFTPPath(remotePath))
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
	return fi, err
}

// MkdirAll creates remotePath and any missing parents; an existing
// directory is fine. It is made for a directory the caller found missing:
// one round trip when its parent exists.
func (c *Client) MkdirAll(ctx context.Context, remotePath string) error {
	op := fmt.Sprintf("create directory %s on %s", remotePath, c.t.addr)
	return c.idempotent(ctx, op, func(ctx context.Context, sc *sftp.Client, attempt int, cn *conn) error {
		p := SFTPPath(remotePath)
		// Callers ask for a directory they found missing: its parent is
		// usually there, and one MKDIR makes it.
		if sc.Mkdir(p) == nil {
			return nil
		}
		if err := sc.MkdirAll(p); err != nil {
			// Lost a race with another creator: fine if it is a directory now.
			if fi, serr := sc.Stat(p); serr == nil && fi.IsDir() {
				return nil
			}
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
}

// Rename moves oldPath to newPath, replacing newPath if it exists (as
// POSIX rename does). Windows can rename a running executable but cannot
// replace one: rename it away first.
func (c *Client) Rename(ctx context.Context, oldPath, newPath string) error {
	op := fmt.Sprintf("rename %s to %s on %s", oldPath, newPath, c.t.addr)
	return c.idempotent(ctx, op, func(ctx context.Context, sc *sftp.Client, attempt int, cn *conn) error {
		o, n := SFTPPath(oldPath), SFTPPath(newPath)
		err := replace(ctx, sc, o, n)
		if err != nil && attempt > 1 {
			// The first attempt may have renamed before the link dropped.
			if _, oerr := sc.Stat(o); errors.Is(oerr, fs.ErrNotExist) {
				if _, nerr := sc.Stat(n); nerr == nil {
					return nil
				}
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
}

// Remove deletes a file or an empty directory. A missing path matches
// fs.ErrNotExist (unless a first attempt removed it before the connection
// dropped).
func (c *Client) Remove(ctx context.Context, remotePath string) error {
	op := fmt.Sprintf("remove %s on %s", remotePath, c.t.addr)
	return c.idempotent(ctx, op, func(ctx context.Context, sc *sftp.Client, attempt int, cn *conn) error {
		err := sc.Remove(SFTPPath(remotePath))
		if err != nil && attempt > 1 && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
}

// ReadDir lists the entries of directory remotePath. A missing directory
// matches fs.ErrNotExist.
func (c *Client) ReadDir(ctx context.Context, remotePath string) ([]fs.FileInfo, error) {
	var entries []fs.FileInfo
	op := fmt.Sprintf("list %s on %s", remotePath, c.t.addr)
	err := c.idempotent(ctx, op, func(ctx context.Context, sc *sftp.Client, attempt int, cn *conn) error {
		var err error
		entries, err = sc.ReadDir(SFTPPath(remotePath))
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
	return entries, err
}
