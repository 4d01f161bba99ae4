package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pkg/sftp"
)

// UploadStream sends what open returns, up to its EOF, to remotePath and
// returns the bytes sent: for content made while it is sent (a compressed
// stream), whose size is not known in advance. Unlike Upload it writes
// remotePath itself, with no rename (one round trip fewer): it is for
// uploads whose receiver checks what it got before it uses it (swdt's
// encoded uploads, which the swap op decodes and verifies by SHA-256), so
// remotePath must not be a file anything runs or reads as it is. A
// failed upload removes it, except when the connection is lost. Writes
// are pipelined. After a reconnect open is called again and the upload
// restarts from zero. The reader is closed when the attempt ends.
func (c *Client) UploadStream(ctx context.Context, open func() (io.ReadCloser, error), remotePath string, progress func(sent int64)) (int64, error) {
	dst := SFTPPath(remotePath)
	op := fmt.Sprintf("upload %s to %s", remotePath, c.t.addr)
	var sent int64
	err := c.idempotent(ctx, op, func(ctx context.Context, sc *sftp.Client, attempt int, cn *conn) error {
		if attempt > 1 && progress != nil {
			progress(0)
		}
		src, err := open()
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		defer src.Close()
		f, err := sc.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
		if err != nil {
			return fmt.Errorf("%s: create %s: %w", op, dst, err)
		}
		r := &uploadReader{ctx: ctx, src: src, size: -1, progress: progress}
		stalled := watchStall(c.stallTimeout(), r, func() {
			cn.kill(fmt.Errorf("upload made no progress for %s", c.stallTimeout()))
		})
		n, err := f.ReadFromWithConcurrency(r, 0)
		sent = n
		if stalled() {
			err = fmt.Errorf("no progress for %s: %w", c.stallTimeout(), sftp.ErrSSHFxConnectionLost)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			if !errors.Is(err, sftp.ErrSSHFxConnectionLost) {
				_ = sc.Remove(dst)
			}
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
	return sent, err
}
