package hotswap

import (
	"context"
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
	// ExpectedRTT is the round-trip time the node's link is expected to
	// have before it is measured (an earlier connection's; 0: not known).
	// On a link Compress sends files as they are over, Prepare makes no
	// patch ahead and keeps no copy.
	ExpectedRTT time.Duration
	// Indexes, when set, holds the indexes of the store's copies of what
	// the node's destinations hold, kept between the runs of --watch.
	Indexes *Indexes
}

// diff writes the patch of src against the store's copy of base, with
// the index the store shares between the nodes of the run: the one
// Indexes keeps (waited for while it is built), else the saved one, else
// one made now and saved.
func (t Transfer) diff(ctx context.Context, w io.Writer, base string, src io.Reader) error {
	t.Indexes.index(ctx, base)
	x, release, err := t.Store.AcquireIndex(ctx, base)
	if err != nil {
		return err
	}
	defer release()
	_, err = x.Diff(ctx, w, src)
	return err
}

// patch writes the patch of the item's source against the store's copy
// of base to w. A source whose digest is known is patched once for every
// node of the run (delta.Store.Patch, whose index is the one Indexes
// holds, if any), the others reading the same patch; progress gets the
// source bytes read.
func (t Transfer) patch(ctx context.Context, w io.Writer, base string, it Item, progress func(int64)) error {
	if it.Source.SHA256 == "" {
		src, err := it.Source.Open()
		if err != nil {
			return err
		}
		defer src.Close()
		return t.diff(ctx, w, base, &countingReader{r: src, progress: progress})
	}
	open := func() (io.ReadCloser, error) { return it.Source.Open() }
	r, err := t.Store.Patch(ctx, base, it.Source.SHA256, open, progress)
	if err != nil {
		return err
	}
	defer r.Close()
	_, err = io.Copy(w, r)
	return err
}

func (t Transfer) compresses() bool { return t.Compress != delta.Mode{} }

// plain reports whether files go as they are over a link whose round-trip
// time is rtt (ok false: not measured): no patch and no copy for the next
// one are made then.
func (t Transfer) plain(rtt time.Duration, ok bool) bool {
	return !t.compresses() || !t.Compress.Encodes(rtt, ok)
}

// rttWait bounds the wait for the link's measure.
const rttWait = 5 * time.Second

// linkRTT is the link's measured round trip. The measure is the least of
// five round trips taken in turn from when the connection was made (a
// loaded machine delays some, never all), so by the time files are staged
// it usually has its answer; when not, it is waited for (up to rttWait)
// rather than the link taken for an unknown one, which would encode files
// a local link sends as they are. A node that does not measure its link
// has no answer.
func linkRTT(ctx context.Context, n Node) (time.Duration, bool) {
	if rtt, ok := n.LinkRTT(); ok || !n.Capabilities().LinkRTT {
		return rtt, ok
	}
	wctx, cancel := context.WithTimeout(ctx, rttWait)
	defer cancel()
	return n.WaitLinkRTT(wctx)
}

// How a staged file travelled (Result.Transfer).
const (
	TransferPlain      = "plain"
	TransferCompressed = "compressed"
	TransferPatch      = "patch"
)

// encoded is where Item's encoded upload lands: beside its staged file,
// unique per run like it.
func (it Item) encoded() string { return ops.EncodedPath(it.Staged()) }

// stageEncoded sends it as a patch against the node's current file when
// the store holds a copy of it, else (or when the patch cannot be made)
// compressed; the swap op decodes and verifies it, and a patch that fails
// there is sent again compressed (resend). A patch made ahead
// (Options.Ahead) against the file the inspect found is used as it is:
// one of at most InlineLimit bytes is not uploaded but travels in the
// swap op's request (how.data). On a local network auto sends it as it
// is. progress gets the source bytes encoded so far; wire is
// what went over the link, all attempts counted.
func stageEncoded(ctx context.Context, n Node, it Item, current ops.FileInfo, opts Options, progress func(int64)) (how upload, wire int64, transfer string, err error) {
	tr := opts.Transfer
	if tr.plain(linkRTT(ctx, n)) {
		// A local network: no patch made ahead is needed.
		opts.Ahead.stop()
		sent, err := stagePlain(ctx, n, it, progress)
		return upload{}, sent, TransferPlain, err
	}
	if !opts.Ahead.keeps(it) {
		defer keepWhileSending(tr.Store, it)()
	}
	if tr.Store != nil && current.Exists && current.SHA256 != "" {
		data, ahead, made := opts.Ahead.patch(it, current.SHA256, progress)
		if made && data != nil {
			// Small enough to travel in the swap op's request.
			return upload{encoding: ops.EncodingPatch, data: data}, int64(len(data)), TransferPatch, nil
		}
		if tr.Store.Has(current.SHA256) {
			sent, perr := sendPatch(ctx, n, it, current.SHA256, opts, progress, ahead)
			wire += sent
			if perr == nil {
				return upload{encoding: ops.EncodingPatch}, wire, TransferPatch, nil
			}
			if ctx.Err() != nil || opFailed(perr, ops.KindLockLost) {
				// The whole file would fare no better.
				return upload{}, wire, TransferPatch, perr
			}
			opts.Observer.Step(fmt.Sprintf("%s: the patch did not work (%v); sending the whole file", it.Name, perr))
		}
	}
	sent, err := sendCompressed(ctx, n, it, opts, progress)
	wire += sent
	return upload{encoding: ops.EncodingZstd}, wire, TransferCompressed, err
}

// sendPatch uploads the patch of it against the store's copy of base
// (the node's file), making it as it sends it; ahead, when set, is that
// patch made ahead, which the first attempt sends.
func sendPatch(ctx context.Context, n Node, it Item, base string, opts Options, progress func(int64), ahead io.ReadCloser) (int64, error) {
	tr := opts.Transfer
	return sendEncoded(ctx, n, it, progress, ahead, func(ctx context.Context, w io.Writer, _ io.Reader, _ *delta.Meter) error {
		return tr.patch(ctx, w, base, it, progress)
	})
}

// sendCompressed uploads it zstd-compressed, at the level the transfer's
// mode chooses as it measures the link.
func sendCompressed(ctx context.Context, n Node, it Item, opts Options, progress func(int64)) (int64, error) {
	return sendEncoded(ctx, n, it, progress, nil, func(ctx context.Context, w io.Writer, src io.Reader, m *delta.Meter) error {
		_, err := delta.Compress(ctx, w, src, opts.Transfer.Compress.Chooser(m))
		return err
	})
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
		keep(context.Background(), s, it)
	}()
	return func() { <-done }
}

// encodeFunc writes the encoding of src to w; m measures the link.
type encodeFunc func(ctx context.Context, w io.Writer, src io.Reader, m *delta.Meter) error

// sendEncoded uploads what encode makes of the source, encoding while it
// sends, to the item's encoded name; the swap op decodes it into the
// staged file and verifies its SHA-256 there. A non-nil ahead is that
// encoding, made ahead and still being made: the first attempt sends it.
func sendEncoded(ctx context.Context, n Node, it Item, progress func(int64), ahead io.ReadCloser, encode encodeFunc) (int64, error) {
	open := func() (io.ReadCloser, error) {
		if ahead != nil {
			r := ahead
			ahead = nil
			return r, nil
		}
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
	sent, err := n.UploadStream(ctx, open, it.encoded(), nil)
	if err != nil {
		return sent, fmt.Errorf("stage %s: %w", it.encoded(), err)
	}
	return sent, nil
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
