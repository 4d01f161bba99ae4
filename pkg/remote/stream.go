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
// stream), whose size is not known in advance. As with Upload the bytes go
// to remotePath+".swdt-part" first and remotePath never holds a partial
// file; writes are pipelined. After a reconnect open is called again and
// the upload restarts from zero. The reader is closed when the attempt
// ends.
func (c *Client) UploadStream(ctx context.Context, open func() (io.ReadCloser, error), remotePath string, progress func(sent int64)) (int64, error) {
	dst := SFTPPath(remotePath)
	part := dst + PartSuffix
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
		f, err := sc.OpenFile(part, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
		if err != nil {
			return fmt.Errorf("%s: create %s: %w", op, part, err)
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
		if err == nil {
			err = replace(sc, part, dst)
		}
		if err != nil {
			if !errors.Is(err, sftp.ErrSSHFxConnectionLost) {
				_ = sc.Remove(part)
			}
			return fmt.Errorf("%s: %w", op, err)
		}
		return nil
	})
	return sent, err
}
