package remote

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"time"

	"golang.org/x/crypto/ssh"
)

// QuickStat describes remotePath as Stat does, in one round trip once its
// session's channel is open: it starts the SFTP subsystem without waiting
// for the server's answer and sends SFTP's INIT and a STAT right behind
// the request, which a server handles in order. pkg/sftp, like every
// client, waits for each of those three answers in turn; for the one
// look swdt takes before it runs anything on a node (is the agent the
// one an earlier run verified?) that is two round trips of 20 ms each on
// a VPN. A server that cannot start the subsystem does not answer a
// request that asked for no answer: after quickStatWait, or any answer
// QuickStat does not follow, it takes the usual way (Stat), so the result
// never depends on the wait.
func (c *Client) QuickStat(ctx context.Context, remotePath string) (fs.FileInfo, error) {
	fi, err := c.quickStat(ctx, remotePath)
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || ctx.Err() != nil {
		return fi, err
	}
	c.log.Debug("quick stat fell back to sftp", "path", remotePath, "err", err)
	return c.Stat(ctx, remotePath)
}

// quickStatWait bounds QuickStat's wait for its answer before it takes
// the usual way.
const quickStatWait = 2 * time.Second

// SFTP version 3 (draft-ietf-secsh-filexfer-02) packet types and status
// codes QuickStat uses.
const (
	fxpInit    = 1
	fxpVersion = 2
	fxpStat    = 17
	fxpStatus  = 101
	fxpAttrs   = 105

	fxNoSuchFile       = 2
	fxPermissionDenied = 3

	attrSize        = 0x1
	attrUIDGID      = 0x2
	attrPermissions = 0x4
	attrACModTime   = 0x8
)

func (c *Client) quickStat(ctx context.Context, remotePath string) (fs.FileInfo, error) {
	cn, err := c.conn(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, quickStatWait)
	defer cancel()
	var fi fs.FileInfo
	err = do(ctx, cn, func() error {
		ch, reqs, err := cn.ssh.OpenChannel("session", nil)
		if err != nil {
			return err
		}
		go ssh.DiscardRequests(reqs)
		stop := context.AfterFunc(ctx, func() { ch.Close() })
		defer stop()
		defer ch.Close()
		if _, err := ch.SendRequest("subsystem", false, ssh.Marshal(struct{ Name string }{"sftp"})); err != nil {
			return err
		}
		p := SFTPPath(remotePath)
		var out []byte
		out = appendPacket(out, fxpInit, binary.BigEndian.AppendUint32(nil, 3))
		stat := binary.BigEndian.AppendUint32(nil, 1)
		stat = binary.BigEndian.AppendUint32(stat, uint32(len(p)))
		out = appendPacket(out, fxpStat, append(stat, p...))
		if _, err := ch.Write(out); err != nil {
			return err
		}
		r := bufio.NewReader(ch)
		if typ, _, err := readPacket(r); err != nil {
			return err
		} else if typ != fxpVersion {
			return fmt.Errorf("sftp answered INIT with packet type %d", typ)
		}
		typ, body, err := readPacket(r)
		if err != nil {
			return err
		}
		fi, err = statAnswer(typ, body, path.Base(p), remotePath)
		return err
	})
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("no answer within %s: %w", quickStatWait, err)
	}
	return fi, err
}

func appendPacket(b []byte, typ byte, body []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(1+len(body)))
	b = append(b, typ)
	return append(b, body...)
}

// readPacket reads one SFTP packet: its type and the bytes after it.
func readPacket(r io.Reader) (byte, []byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return 0, nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if size < 1 || size > 256<<10 {
		return 0, nil, fmt.Errorf("sftp packet of %d bytes", size)
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, err
	}
	return b[0], b[1:], nil
}

// statAnswer reads the answer to QuickStat's STAT (request ID 1).
func statAnswer(typ byte, b []byte, name, remotePath string) (fs.FileInfo, error) {
	d := decoder{b: b}
	if id := d.u32(); id != 1 {
		return nil, fmt.Errorf("sftp answered request %d, want 1", id)
	}
	switch typ {
	case fxpStatus:
		code := d.u32()
		msg := d.str()
		if d.err != nil {
			return nil, d.err
		}
		op := fmt.Sprintf("stat %s", remotePath)
		switch code {
		case fxNoSuchFile:
			return nil, &fs.PathError{Op: op, Path: remotePath, Err: fs.ErrNotExist}
		case fxPermissionDenied:
			return nil, &fs.PathError{Op: op, Path: remotePath, Err: fs.ErrPermission}
		}
		return nil, fmt.Errorf("%s: sftp status %d: %s", op, code, msg)
	case fxpAttrs:
	default:
		return nil, fmt.Errorf("sftp answered STAT with packet type %d", typ)
	}
	fi := &statInfo{name: name}
	flags := d.u32()
	if flags&attrSize != 0 {
		fi.size = int64(d.u64())
	}
	if flags&attrUIDGID != 0 {
		d.u32()
		d.u32()
	}
	if flags&attrPermissions != 0 {
		perm := d.u32()
		fi.mode = fs.FileMode(perm & 0o777)
		if perm&0o170000 == 0o040000 {
			fi.mode |= fs.ModeDir
		}
	}
	if flags&attrACModTime != 0 {
		d.u32()
		fi.mtime = time.Unix(int64(d.u32()), 0)
	}
	return fi, d.err
}

// decoder reads SFTP's big-endian fields, recording the first shortfall.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) u32() uint32 {
	if len(d.b) < 4 {
		d.err = errors.New("sftp packet cut short")
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) u64() uint64 {
	hi := uint64(d.u32())
	return hi<<32 | uint64(d.u32())
}

func (d *decoder) str() string {
	n := d.u32()
	if uint32(len(d.b)) < n {
		d.err = errors.New("sftp packet cut short")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// statInfo is the fs.FileInfo of QuickStat, with pkg/sftp's reading of
// SFTP's attributes (times in whole seconds).
type statInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.size }
func (s *statInfo) Mode() fs.FileMode  { return s.mode }
func (s *statInfo) ModTime() time.Time { return s.mtime }
func (s *statInfo) IsDir() bool        { return s.mode.IsDir() }
func (s *statInfo) Sys() any           { return nil }
