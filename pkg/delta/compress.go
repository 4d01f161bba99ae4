package delta

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// Level is how hard a chunk is compressed: LevelOff stores it (zstd raw
// blocks, so the stream stays one format), 1 to 4 are zstd's fastest,
// default, better and best.
type Level int

// The levels.
const (
	LevelOff     Level = 0
	LevelFastest Level = 1
	LevelDefault Level = 2
	LevelBetter  Level = 3
	LevelBest    Level = 4
)

// chunkSize is the input of one zstd frame: each frame may use another
// level, and it bounds the encoder's and the decoder's window.
const chunkSize = 4 << 20

// maxBlock is zstd's largest block.
const maxBlock = 128 << 10

// CompressStats says what Compress did.
type CompressStats struct {
	// In is the bytes read from the source; Out the bytes written.
	In, Out int64
	// Stored is how many of In went out uncompressed (LevelOff).
	Stored int64
}

// Compress writes src to dst as a zstd stream: one frame per 4 MiB of
// input, each at the level choose returns when the frame starts (so that
// the level can follow the link while the upload runs). Memory stays
// bounded by a few chunks whatever src's size.
func Compress(ctx context.Context, dst io.Writer, src io.Reader, choose func() Level) (CompressStats, error) {
	var st CompressStats
	cw := &countWriter{w: dst}
	encoders := map[Level]*zstd.Encoder{}
	defer func() {
		for _, e := range encoders {
			_ = e.Close()
		}
	}()
	buf := make([]byte, chunkSize)
	for first := true; ; first = false {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		n, err := io.ReadFull(src, buf)
		if err == io.EOF && !first {
			break
		}
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return st, fmt.Errorf("read source: %w", err)
		}
		chunk := buf[:n]
		st.In += int64(n)
		level := choose()
		if level == LevelOff {
			st.Stored += int64(n)
			if werr := writeRawFrame(cw, chunk); werr != nil {
				return st, werr
			}
		} else {
			enc, eerr := encoderFor(encoders, level)
			if eerr != nil {
				return st, eerr
			}
			enc.Reset(cw)
			if _, werr := enc.Write(chunk); werr != nil {
				return st, fmt.Errorf("compress: %w", werr)
			}
			if werr := enc.Close(); werr != nil {
				return st, fmt.Errorf("compress: %w", werr)
			}
		}
		st.Out = cw.n
		if err != nil { // short final chunk
			break
		}
	}
	st.Out = cw.n
	return st, nil
}

func encoderFor(encoders map[Level]*zstd.Encoder, l Level) (*zstd.Encoder, error) {
	if e := encoders[l]; e != nil {
		return e, nil
	}
	e, err := newEncoder(l)
	if err != nil {
		return nil, err
	}
	encoders[l] = e
	return e, nil
}

// newEncoder makes a one-goroutine zstd encoder for level l with a window
// of one chunk.
func newEncoder(l Level) (*zstd.Encoder, error) {
	if l < LevelFastest || l > LevelBest {
		return nil, fmt.Errorf("compression level %d is not between %d and %d", l, LevelFastest, LevelBest)
	}
	levels := [...]zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression, zstd.SpeedBestCompression}
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(levels[l-1]), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(chunkSize), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	return e, nil
}

// writeRawFrame writes p as one zstd frame of raw (stored) blocks:
// single segment, 4-byte content size, no checksum.
func writeRawFrame(w io.Writer, p []byte) error {
	hdr := []byte{0x28, 0xB5, 0x2F, 0xFD, 0xA0, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(hdr[5:], uint32(len(p)))
	if _, err := w.Write(hdr); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	for first := true; first || len(p) > 0; first = false {
		n := min(len(p), maxBlock)
		bh := uint32(n) << 3 // type 0: raw
		if n == len(p) {
			bh |= 1 // last block
		}
		if _, err := w.Write([]byte{byte(bh), byte(bh >> 8), byte(bh >> 16)}); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if _, err := w.Write(p[:n]); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		p = p[n:]
	}
	return nil
}

// Decompress writes the content of the zstd stream src to dst and
// returns its length. It accepts windows up to 8 MiB (what Compress and
// Diff write is at most 4 MiB), so a damaged or hostile stream cannot make
// it allocate more.
func Decompress(dst io.Writer, src io.Reader) (int64, error) {
	d, err := newDecoder(src)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	n, err := io.Copy(dst, d)
	if err != nil {
		return n, fmt.Errorf("decompress: %w", err)
	}
	return n, nil
}

func newDecoder(src io.Reader) (*zstd.Decoder, error) {
	d, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(2*chunkSize), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	return d, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
