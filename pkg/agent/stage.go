package agent

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"strings"

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
func decodeStaged(w winos.OS, it ops.StageDecodeItem, inline []byte) (info ops.FileInfo, leftover, err error) {
	if err := checkStageNames(it); err != nil {
		return ops.FileInfo{}, nil, err
	}
	info, err = decodeOne(w, it, inline)
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

// stagedMark and encodedSuffix are the names of a run's files: the
// staged file is Destination + stagedMark + the run's ID, its encoded
// upload the staged name + encodedSuffix.
const (
	stagedMark    = ".swdt-new-"
	encodedSuffix = ".swdt-zst"
)

// checkStageNames refuses an item whose files are not a staged file and
// its encoded upload: the op removes them, so it must never be pointed at
// a destination or anything else.
func checkStageNames(it ops.StageDecodeItem) error {
	i := strings.LastIndex(strings.ToLower(it.Staged), stagedMark)
	if i <= 0 {
		return fmt.Errorf("staged path %s is not named <destination>%s<run ID>", it.Staged, stagedMark)
	}
	if id := it.Staged[i+len(stagedMark):]; id == "" || strings.ContainsAny(id, `\/.:`) {
		return fmt.Errorf("staged path %s is not named <destination>%s<run ID>", it.Staged, stagedMark)
	}
	if !strings.EqualFold(it.Encoded, it.Staged+encodedSuffix) {
		return fmt.Errorf("encoded upload %s is not named %s%s", it.Encoded, it.Staged, encodedSuffix)
	}
	return nil
}

func decodeOne(w winos.OS, it ops.StageDecodeItem, inline []byte) (ops.FileInfo, error) {
	var enc io.Reader = bytes.NewReader(inline)
	if inline == nil {
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
	h := newTeeHash(out)
	defer h.stop()
	bw := bufio.NewWriterSize(h, 1<<20)
	// The declared size bounds what is written, whatever the stream says.
	dst := &sizeLimit{w: bw, left: it.Size, size: it.Size}
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
		err = bw.Flush()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return ops.FileInfo{}, fmt.Errorf("decode %s into %s: %w", it.Encoded, it.Staged, err)
	}
	got := h.sum()
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
// the caller reports.
func applyPatch(w winos.OS, reference string, dst io.Writer, patch io.Reader) (int64, error) {
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
	return delta.Apply(dst, ref, st.Size, bufio.NewReaderSize(patch, 256<<10))
}

// teeHash writes to w and computes the SHA-256 of what it wrote, the
// hash of a large write running beside the write itself: a decode costs
// about the longer of the two rather than their sum.
type teeHash struct {
	w    io.Writer
	h    hash.Hash
	req  chan []byte
	done chan struct{}
}

// teeSerial is the size under which a write is hashed in line.
const teeSerial = 64 << 10

func newTeeHash(w io.Writer) *teeHash {
	t := &teeHash{w: w, h: sha256.New(), req: make(chan []byte), done: make(chan struct{})}
	go func() {
		for p := range t.req {
			t.h.Write(p)
			t.done <- struct{}{}
		}
	}()
	return t
}

func (t *teeHash) Write(p []byte) (int, error) {
	if len(p) < teeSerial {
		n, err := t.w.Write(p)
		t.h.Write(p[:n])
		return n, err
	}
	// A short write fails the decode, so the hash of all of p is moot.
	t.req <- p
	n, err := t.w.Write(p)
	<-t.done // p is the caller's again
	return n, err
}

// sum is the SHA-256 of everything written, in hex.
func (t *teeHash) sum() string { return hex.EncodeToString(t.h.Sum(nil)) }

// stop ends the hashing goroutine.
func (t *teeHash) stop() { close(t.req) }

// errTooLong is a decoded stream longer than the size its swap declared.
var errTooLong = errors.New("the decoded file is longer than its declared size")

// sizeLimit passes at most size bytes on to w; the write that would go
// past them writes nothing and fails with errTooLong.
type sizeLimit struct {
	w          io.Writer
	left, size int64
}

func (l *sizeLimit) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, fmt.Errorf("%w of %d bytes: stopped", errTooLong, l.size)
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	return n, err
}

func removeIfExists(w winos.OS, p string) error {
	if err := w.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
