package agent

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"strings"
	"sync"

	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// decodeStaged decodes one encoded upload into its staged file and keeps
// the result only when its SHA-256 is the expected one; the encoded file
// is always removed (leftover says why it could not be, after a good
// decode). Names that are not a run's staged file and its upload are
// refused, and nothing is touched. A non-nil inline is the encoded upload
// itself, sent in the request: Encoded is then only removed if it exists.
func decodeStaged(w winos.OS, it ops.StageDecodeItem, data io.Reader) (info ops.FileInfo, leftover, err error) {
	if err := checkStageNames(it); err != nil {
		return ops.FileInfo{}, nil, err
	}
	info, err = decodeOne(w, it, data)
	if err != nil {
		if rerr := removeIfExists(w, it.Staged); rerr != nil {
			err = fmt.Errorf("%w; %w", err, rerr)
		}
	}
	if rerr := removeIfExists(w, it.Encoded); rerr != nil && err == nil {
		return info, rerr, nil
	}
	return info, nil, err
}

// checkStageNames refuses an item whose files are not a staged file and
// its encoded upload: the op removes them, so it must never be pointed at
// a destination or anything else.
func checkStageNames(it ops.StageDecodeItem) error {
	if _, _, ok := ops.StagedDest(it.Staged); !ok {
		return fmt.Errorf("staged path %s is not named %s", it.Staged, ops.StagedPath("<destination>", "<run ID>"))
	}
	if want := ops.EncodedPath(it.Staged); !strings.EqualFold(it.Encoded, want) {
		return fmt.Errorf("encoded upload %s is not named %s", it.Encoded, want)
	}
	return nil
}

func decodeOne(w winos.OS, it ops.StageDecodeItem, data io.Reader) (ops.FileInfo, error) {
	enc := data
	if enc == nil {
		f, err := w.Open(it.Encoded)
		if err != nil {
			return ops.FileInfo{}, err
		}
		defer f.Close()
		enc = f
	}
	out, err := w.Create(it.Staged)
	if err != nil {
		return ops.FileInfo{}, err
	}
	var clone *cloneTarget
	if cl, ok := out.(winos.Cloner); ok && cl.ClusterSize() > 0 && it.Encoding == ops.EncodingPatch {
		clone = &cloneTarget{to: cl, cluster: cl.ClusterSize()}
		// What is cloned is hashed as the reference holds it when only
		// administrators can change the reference (who could change the
		// destination itself: it is the destination); else it is read
		// back from the staged file, so that the digest is of what the
		// file holds. A file that cannot be opened again is copied.
		if !lockedDown(w, it.Reference) {
			back, err := w.Open(it.Staged)
			if err != nil {
				clone = nil
			} else {
				defer back.Close()
				clone.back = back
			}
		}
	}
	// The declared size bounds what is written, whatever the stream says.
	dst := newStagedWriter(out, it.Size, clone)
	var size int64
	switch it.Encoding {
	case ops.EncodingZstd:
		size, err = delta.Decompress(dst, bufio.NewReaderSize(enc, 1<<20))
	case ops.EncodingPatch:
		size, err = applyPatch(w, it.Reference, dst, enc)
	default:
		err = fmt.Errorf("unknown encoding %q", it.Encoding)
	}
	if err == nil {
		err = dst.flush()
	}
	// The writer's goroutine is done with out before out is closed, on
	// every path (a failed decode too).
	dst.stop()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return ops.FileInfo{}, fmt.Errorf("decode %s into %s: %w", it.Encoded, it.Staged, err)
	}
	got := dst.sum()
	if !strings.EqualFold(got, it.SHA256) {
		return ops.FileInfo{}, fmt.Errorf("decoded %s has SHA-256 %s, want %s", it.Staged, got, it.SHA256)
	}
	st, err := w.Stat(it.Staged)
	if err != nil {
		return ops.FileInfo{}, err
	}
	return ops.FileInfo{Path: it.Staged, Exists: true, Size: size, SHA256: got, ModTicks: dotNetTicks(st.ModTime)}, nil
}

// applyPatch rebuilds a file from the reference on the node and a patch.
// A reference changed since swdt inspected it gives another digest, which
// the caller reports. The writer is flushed (or stopped) before the
// reference closes: it may still be cloning from it.
func applyPatch(w winos.OS, reference string, dst *stagedWriter, patch io.Reader) (int64, error) {
	if reference == "" {
		return 0, errors.New("a patch needs its reference")
	}
	st, err := w.Stat(reference)
	if err != nil {
		return 0, err
	}
	ref, err := w.Open(reference)
	if err != nil {
		return 0, err
	}
	defer ref.Close()
	size, err := delta.Apply(dst, ref, st.Size, bufio.NewReaderSize(patch, 256<<10))
	if err == nil {
		err = dst.flush()
	}
	dst.stop()
	return size, err
}

// stagedWriter writes a decoded file in blocks and computes its SHA-256:
// the write of one block and its hash run beside each other and beside
// the decode filling the next blocks, so that a decode costs about the
// longest of the three (the hash, about 1.7 GB/s with SHA-NI) rather than
// their sum. With a clone target, a patch's long copies from the
// reference are cloned instead (CopyReference). It takes at most size
// bytes: the write that would go past them writes nothing and fails with
// errTooLong. Not safe for concurrent use; stop must be called.
type stagedWriter struct {
	h          hash.Hash
	left, size int64
	cur        []byte      // the block being filled; nil: take one from free
	free       chan []byte // blocks ready to be filled
	full       chan piece  // filled blocks and clones, in order, for the writer
	done       chan struct{}
	closed     bool // full is closed

	// clone, when not nil, clones blocks of the reference (the writer's,
	// once CopyReference has passed it one); scratch are the writer's
	// buffers to read what it clones, or copies when a clone is refused.
	clone   *cloneTarget
	scratch [2][]byte

	mu  sync.Mutex
	err error // the first write error
}

// piece is what the writer adds to the file next: a filled block, or
// (b nil) n bytes of the reference src at off, to clone.
type piece struct {
	b      []byte
	src    winos.File
	off, n int64
}

// cloneTarget is a staged file on a volume that clones blocks.
type cloneTarget struct {
	to winos.Cloner
	// back, when not nil, is the staged file open for reading: what was
	// cloned is read back from it and hashed, so that the digest is of
	// the file's bytes. When nil, the reference's bytes are hashed as they
	// are cloned (only administrators can change them).
	back    io.ReaderAt
	cluster int64
	// cloned counts the bytes cloned; refused is the volume's refusal,
	// after which the rest is copied (the writer's).
	cloned  int64
	refused error
}

// Blocks of the stagedWriter: a decode runs up to stagedBlocks-1 blocks
// ahead of the disk. Blocks of 4 MiB hand off a quarter as often as 1 MiB
// ones: in 21 runs of BenchmarkDecodePatch256 each, interleaved, they took
// 254-386 ms (median 271) where 1 MiB blocks took 266-684 (median 309);
// more blocks in flight did not help. A copy from the reference is cloned
// when it holds at least minClone bytes of whole clusters.
const (
	stagedBlock  = 4 << 20
	stagedBlocks = 3
	minClone     = 1 << 20
)

// newStagedWriter writes out; clone, when not nil, is out on a volume
// that clones blocks.
func newStagedWriter(out io.Writer, size int64, clone *cloneTarget) *stagedWriter {
	sw := &stagedWriter{
		h: sha256.New(), left: size, size: size,
		free: make(chan []byte, stagedBlocks), full: make(chan piece, stagedBlocks),
		done: make(chan struct{}), clone: clone,
	}
	for range stagedBlocks {
		sw.free <- make([]byte, 0, stagedBlock)
	}
	go sw.drain(out)
	return sw
}

// drain writes the filled blocks to out and hashes them, in order; after
// a failed write it only hands the blocks back, so the decode never waits
// for one, and learns of the error on its next write.
func (sw *stagedWriter) drain(out io.Writer) {
	defer close(sw.done)
	toHash, hashed := make(chan []byte), make(chan struct{})
	go func() {
		for b := range toHash {
			sw.h.Write(b)
			hashed <- struct{}{}
		}
	}()
	defer close(toHash)
	var pos int64 // the file's length
	for p := range sw.full {
		if p.b == nil {
			if sw.failed() == nil {
				sw.setErr(sw.cloneRange(out, p, pos, toHash, hashed))
				pos += p.n
			}
			continue
		}
		if sw.failed() == nil {
			toHash <- p.b
			_, err := out.Write(p.b)
			<-hashed
			sw.setErr(err)
			pos += int64(len(p.b))
		}
		sw.free <- p.b[:0]
	}
}

func (sw *stagedWriter) setErr(err error) {
	if err != nil {
		sw.mu.Lock()
		sw.err = err
		sw.mu.Unlock()
	}
}

// cloneRange adds the reference's range p to the file, at pos, by cloning
// it, and hashes it (as the reference or the file holds it, see
// cloneTarget.back); a clone the volume refuses is copied, and so is
// every later one.
func (sw *stagedWriter) cloneRange(out io.Writer, p piece, pos int64, toHash chan<- []byte, hashed <-chan struct{}) error {
	c := sw.clone
	if c.refused == nil {
		if c.refused = c.to.CloneAppend(p.src, p.off, p.n); c.refused == nil {
			c.cloned += p.n
			if c.back == nil {
				return sw.pass(p.src, p.off, p.n, nil, toHash, hashed)
			}
			return sw.pass(c.back, pos, p.n, nil, toHash, hashed)
		}
	}
	return sw.pass(p.src, p.off, p.n, out, toHash, hashed)
}

// pass reads r's n bytes at off and hashes them, and writes them to out
// when it is not nil: the hash of a buffer runs beside the reading (and
// writing) of the next.
func (sw *stagedWriter) pass(r io.ReaderAt, off, n int64, out io.Writer, toHash chan<- []byte, hashed <-chan struct{}) error {
	if sw.scratch[0] == nil {
		sw.scratch = [2][]byte{make([]byte, stagedBlock), make([]byte, stagedBlock)}
	}
	pending := false
	defer func() {
		if pending {
			<-hashed
		}
	}()
	for i := 0; n > 0; i++ {
		b := sw.scratch[i%2][:min(n, stagedBlock)]
		if m, err := r.ReadAt(b, off); m < len(b) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("read %d bytes at %d: %w", len(b), off, err)
		}
		if pending {
			<-hashed
		}
		toHash <- b
		pending = true
		if out != nil {
			if _, err := out.Write(b); err != nil {
				return err
			}
		}
		off, n = off+int64(len(b)), n-int64(len(b))
	}
	return nil
}

func (sw *stagedWriter) failed() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.err
}

// block returns the block being filled, taking a free one when needed.
func (sw *stagedWriter) block() []byte {
	if sw.cur == nil {
		sw.cur = <-sw.free
	}
	return sw.cur
}

// filled records n more bytes in the current block, and passes the block
// on when it is full.
func (sw *stagedWriter) filled(n int) {
	sw.cur = sw.cur[:len(sw.cur)+n]
	sw.left -= int64(n)
	if len(sw.cur) == cap(sw.cur) {
		sw.full <- piece{b: sw.cur}
		sw.cur = nil
	}
}

func (sw *stagedWriter) tooLong() error {
	return fmt.Errorf("%w of %d bytes: stopped", errTooLong, sw.size)
}

func (sw *stagedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > sw.left {
		return 0, sw.tooLong()
	}
	if err := sw.failed(); err != nil {
		return 0, err
	}
	n := 0
	for n < len(p) {
		b := sw.block()
		c := copy(b[len(b):cap(b)], p[n:])
		sw.filled(c)
		n += c
	}
	return n, nil
}

// ReadFrom reads r straight into the blocks (a patch's copies from the
// reference need no buffer of their own).
func (sw *stagedWriter) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		if err := sw.failed(); err != nil {
			return total, err
		}
		b := sw.block()
		n, err := r.Read(b[len(b):cap(b)])
		if int64(n) > sw.left {
			return total, sw.tooLong()
		}
		sw.filled(n)
		total += int64(n)
		switch {
		case err == io.EOF:
			return total, nil
		case err != nil:
			return total, err
		}
	}
}

// CopyReference adds n bytes of the reference ref at off: on a volume
// that clones blocks, the whole clusters of them that fall on the file's
// clusters are cloned (when they are at least minClone bytes), the rest
// copied through the blocks.
func (sw *stagedWriter) CopyReference(ref io.ReaderAt, off, n int64) (int64, error) {
	src, ok := ref.(winos.File)
	if sw.clone == nil || !ok {
		return sw.ReadFrom(io.NewSectionReader(ref, off, n))
	}
	c := sw.clone.cluster
	at := sw.size - sw.left // where the copy lands in the file
	head := (c - at%c) % c
	body := (n - head) / c * c
	if (off-at)%c != 0 || body < minClone {
		return sw.ReadFrom(io.NewSectionReader(ref, off, n))
	}
	m, err := sw.ReadFrom(io.NewSectionReader(ref, off, head))
	if err != nil {
		return m, err
	}
	if body > sw.left {
		return m, sw.tooLong()
	}
	if err := sw.failed(); err != nil {
		return m, err
	}
	sw.pushCur()
	sw.full <- piece{src: src, off: off + head, n: body}
	sw.left -= body
	t, err := sw.ReadFrom(io.NewSectionReader(ref, off+head+body, n-head-body))
	return m + body + t, err
}

// pushCur passes on the block being filled, if it holds anything.
func (sw *stagedWriter) pushCur() {
	if sw.cur != nil && len(sw.cur) > 0 {
		sw.full <- piece{b: sw.cur}
		sw.cur = nil
	}
}

// flush writes what is left and waits for every block to be written; it
// returns the first write error.
func (sw *stagedWriter) flush() error {
	if !sw.closed {
		sw.pushCur()
	}
	sw.stop()
	return sw.failed()
}

// stop ends the writing, once the blocks passed on are written.
func (sw *stagedWriter) stop() {
	if !sw.closed {
		sw.closed = true
		close(sw.full)
	}
	<-sw.done
}

// sum is the SHA-256 of everything written, in hex; valid after flush.
func (sw *stagedWriter) sum() string { return hex.EncodeToString(sw.h.Sum(nil)) }

// errTooLong is a decoded stream longer than the size its swap declared.
var errTooLong = errors.New("the decoded file is longer than its declared size")

func removeIfExists(w winos.OS, p string) error {
	if err := w.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
