package hotswap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/ops"
)

// Transfer says how staged files travel to the node.
type Transfer struct {
	// Compress is the --compress setting. The zero value (off) sends
	// files as they are, with no patches either.
	Compress delta.Mode
	// Store keeps a copy of what was sent, for patches against it next
	// time; nil sends no patches.
	Store *delta.Store
}

func (t Transfer) compresses() bool { return t.Compress != delta.Mode{} }

// EncodingNode is what compressed and patched transfers need beyond Node;
// *node.Node implements it. A Node without it gets plain uploads.
type EncodingNode interface {
	UploadStream(ctx context.Context, open func() (io.ReadCloser, error), remotePath string, progress func(sent int64)) (int64, error)
	DecodeStaged(ctx context.Context, runID string, items []ops.StageDecodeItem) ([]ops.StageDecodeResult, error)
	// LinkRTT is the link's round-trip time, when measured.
	LinkRTT() (time.Duration, bool)
}

// How a staged file travelled (Result.Transfer).
const (
	TransferPlain      = "plain"
	TransferCompressed = "compressed"
	TransferPatch      = "patch"
)

// encodedSuffix names an encoded upload: the staged name and this, until
// the node decodes it into the staged file.
const encodedSuffix = ".swdt-zst"

// encoded is where Item's encoded upload lands: beside its staged file,
// unique per run like it.
func (it Item) encoded() string { return it.Staged() + encodedSuffix }

// stageEncoded sends it as a patch against the node's current file when
// the store holds a copy of it, else (or when the patch fails on the
// node: damaged, or the file changed since the inspect) compressed, and
// has the node decode and verify it. On a local network auto sends it as
// it is. progress gets the source bytes encoded so far; wire is what went
// over the link, all attempts counted.
func stageEncoded(ctx context.Context, n Node, en EncodingNode, it Item, current ops.FileInfo, opts Options, progress func(int64)) (info ops.FileInfo, wire int64, how string, err error) {
	tr := opts.Transfer
	if !tr.Compress.Encodes(en.LinkRTT()) {
		info, sent, err := stagePlain(ctx, n, it, progress)
		return info, sent, TransferPlain, err
	}
	defer keepWhileSending(tr.Store, it)()
	if tr.Store != nil && current.Exists && current.SHA256 != "" {
		f, size, oerr := tr.Store.Open(current.SHA256)
		if oerr == nil {
			f.Close()
			info, sent, perr := sendEncoded(ctx, n, en, it, progress, ops.StageDecodeItem{Encoding: ops.EncodingPatch, Reference: it.Destination},
				func(ctx context.Context, w io.Writer, src io.Reader, _ *delta.Meter) error {
					ref, _, err := tr.Store.Open(current.SHA256)
					if err != nil {
						return err
					}
					defer ref.Close()
					_, err = delta.Diff(ctx, w, ref, size, current.SHA256, src)
					return err
				})
			wire += sent
			if perr == nil {
				return info, wire, TransferPatch, nil
			}
			if ctx.Err() != nil || opFailed(perr, "lock-lost") {
				// The whole file would fare no better.
				return ops.FileInfo{}, wire, TransferPatch, perr
			}
			opts.Observer.Step(fmt.Sprintf("%s: the patch did not work (%v); sending the whole file", it.Name, perr))
		}
	}
	info, sent, err := sendEncoded(ctx, n, en, it, progress, ops.StageDecodeItem{Encoding: ops.EncodingZstd},
		func(ctx context.Context, w io.Writer, src io.Reader, m *delta.Meter) error {
			_, err := delta.Compress(ctx, w, src, tr.Compress.Chooser(m))
			return err
		})
	wire += sent
	return info, wire, TransferCompressed, err
}

// keepWhileSending starts copying the source into the store, for the
// next push's patch, while it is being sent; the returned function waits
// for the copy. A failure only costs the next push its patch; a copy of a
// file whose upload failed is only kept until pruned.
func keepWhileSending(s *delta.Store, it Item) (wait func()) {
	if s == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := it.Source.Open()
		if err != nil {
			return
		}
		defer f.Close()
		_ = s.Put(it.Source.SHA256, f, it.Source.Size)
	}()
	return func() { <-done }
}

// encodeFunc writes the encoding of src to w; m measures the link.
type encodeFunc func(ctx context.Context, w io.Writer, src io.Reader, m *delta.Meter) error

// sendEncoded uploads what encode makes of the source, encoding while it
// sends, then has the node decode it into the staged file and verify its
// SHA-256. Nothing but the staged file (verified) is left on the node.
func sendEncoded(ctx context.Context, n Node, en EncodingNode, it Item, progress func(int64), item ops.StageDecodeItem, encode encodeFunc) (ops.FileInfo, int64, error) {
	item.Encoded, item.Staged, item.SHA256 = it.encoded(), it.Staged(), it.Source.SHA256
	open := func() (io.ReadCloser, error) {
		src, err := it.Source.Open()
		if err != nil {
			return nil, err
		}
		pr, pw := io.Pipe()
		meter := delta.NewMeter(pr)
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer src.Close()
			pw.CloseWithError(encode(ctx, pw, &countingReader{r: src, progress: progress}, meter))
		}()
		return &encodedStream{Meter: meter, pr: pr, done: done}, nil
	}
	sent, err := en.UploadStream(ctx, open, item.Encoded, nil)
	if err != nil {
		return ops.FileInfo{}, sent, fmt.Errorf("stage %s: %w", item.Encoded, err)
	}
	results, err := en.DecodeStaged(ctx, it.runID, []ops.StageDecodeItem{item})
	if err != nil {
		removeQuietly(n, item.Encoded)
		removeQuietly(n, item.Staged)
		return ops.FileInfo{}, sent, fmt.Errorf("decode %s: %w", item.Encoded, err)
	}
	if len(results) != 1 {
		return ops.FileInfo{}, sent, fmt.Errorf("decode %s: %d results for one file", item.Encoded, len(results))
	}
	if r := results[0]; !r.OK {
		return ops.FileInfo{}, sent, errors.New(r.Error)
	}
	return results[0].File, sent, nil
}

// encodedStream is the reading end of an encoding in progress; Close
// stops the encoder and waits for it.
type encodedStream struct {
	*delta.Meter
	pr   *io.PipeReader
	done chan struct{}
}

func (s *encodedStream) Close() error {
	err := s.pr.Close()
	<-s.done
	return err
}

// countingReader reports how much of the source was read.
type countingReader struct {
	r        io.Reader
	n        atomic.Int64
	progress func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.progress(c.n.Add(int64(n)))
	return n, err
}
