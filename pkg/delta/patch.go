package delta

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"sync"
)

// A patch is a zstd stream (Level fastest, 4 MiB window) whose content is
//
//	magic  uvarint(reference size)  op...  'e' uvarint(result size)
//
// with ops 'c' uvarint(length) varint(offset - end of the previous copy)
// (copy from the reference) and 'l' uvarint(length) bytes (insert).
const patchMagic = "swdt-patch-1\n"

const (
	opCopy    = 'c'
	opLiteral = 'l'
	opEnd     = 'e'
)

const (
	window     = 32      // bytes hashed per index entry and per lookup
	stride     = 32      // the reference is indexed every stride bytes
	maxTabBits = 23      // index entries: at most 8 Mi, 64 MiB
	segment    = 4 << 20 // new-file bytes held at a time
	maxLiteral = 1 << 20
	repReach   = 16 // how far past a match's end the same offset is tried again
	hashMul    = 0x100000001b3
	equalChunk = 256 // bytes prefixLen compares at once
)

// ErrReference reports a reference whose SHA-256 is not the expected one:
// nothing was written.
var ErrReference = errors.New("the reference is not the file expected")

// DiffStats says what Diff did.
type DiffStats struct {
	// Copied is the bytes of the new file taken from the reference;
	// Inserted the bytes sent as they are (before compression).
	Copied, Inserted int64
	// Out is the patch's size.
	Out int64
}

// Diff writes to dst a patch that turns the reference (refSize bytes)
// into the content of src. It reads the reference once to index it and
// checks its SHA-256 against wantRef (hex) before writing anything; a
// mismatch is ErrReference. The reference is then read where matches
// point, through a small page cache: memory is the index plus a few MiB.
func Diff(ctx context.Context, dst io.Writer, ref io.ReaderAt, refSize int64, wantRef string, src io.Reader) (DiffStats, error) {
	x, err := NewIndex(ctx, ref, refSize, wantRef)
	if err != nil {
		return DiffStats{}, err
	}
	return x.Diff(ctx, dst, src)
}

// Index is a reference indexed for patches against it: built once (the
// most of Diff's work), it serves any number of them, at once too. The
// reference must stay readable while it is used.
type Index struct {
	idx  *index
	ref  io.ReaderAt
	size int64
	// unmap, when set, releases the table: it is the saved index mapped
	// into memory (loadIndexFile), not the heap's.
	unmap func()
}

// NewIndex reads the reference (size bytes) once to index it, and checks
// its SHA-256 against want (hex; "" checks nothing): a mismatch is
// ErrReference.
func NewIndex(ctx context.Context, ref io.ReaderAt, size int64, want string) (*Index, error) {
	idx, err := indexReference(ctx, ref, size, want)
	if err != nil {
		return nil, err
	}
	return &Index{idx: idx, ref: ref, size: size}, nil
}

// indexMagic starts a saved index: then uvarint(table bits), uvarint(the
// reference's size), zeros up to indexHeader bytes, and the table, 8
// bytes little-endian per entry. The table starts at a fixed, aligned
// offset so that it can be used where it is mapped (loadIndexFile).
// An index saved as version 1 (the same without the zeros) still loads.
const (
	indexMagic   = "swdt-index-2\n"
	indexMagicV1 = "swdt-index-1\n"
	indexHeader  = 64
)

// Save writes the index, for LoadIndex.
func (x *Index) Save(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	hdr := []byte(indexMagic)
	hdr = binary.AppendUvarint(hdr, uint64(x.idx.bits))
	hdr = binary.AppendUvarint(hdr, uint64(x.size))
	_, _ = bw.Write(append(hdr, make([]byte, indexHeader-len(hdr))...))
	var b [8]byte
	for _, e := range x.idx.tab {
		binary.LittleEndian.PutUint64(b[:], e)
		if _, err := bw.Write(b[:]); err != nil {
			return fmt.Errorf("save the index: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("save the index: %w", err)
	}
	return nil
}

// LoadIndex reads an index Save wrote of the reference ref (size bytes).
// The reference is not read: an index saved of another file of the same
// size makes patches that do not rebuild the file, which the node's check
// of the result's SHA-256 catches.
func LoadIndex(r io.Reader, ref io.ReaderAt, size int64) (*Index, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	magic := make([]byte, len(indexMagic))
	if _, err := io.ReadFull(br, magic); err != nil || (string(magic) != indexMagic && string(magic) != indexMagicV1) {
		return nil, fmt.Errorf("%w: not a saved index", ErrPatch)
	}
	cr := &countingByteReader{r: br, n: len(magic)}
	b, err := readIndexHeader(cr, size)
	if err != nil {
		return nil, err
	}
	if string(magic) == indexMagic {
		if _, err := br.Discard(indexHeader - cr.n); err != nil {
			return nil, fmt.Errorf("%w: the saved index is cut short", ErrPatch)
		}
	}
	idx := &index{tab: newTable(b, false), bits: b}
	buf := make([]byte, 8<<10)
	for i := 0; i < len(idx.tab); {
		m := min(len(buf), (len(idx.tab)-i)*8)
		if _, err := io.ReadFull(br, buf[:m]); err != nil {
			return nil, fmt.Errorf("%w: the saved index is cut short", ErrPatch)
		}
		for j := 0; j < m; j += 8 {
			idx.tab[i] = binary.LittleEndian.Uint64(buf[j:])
			i++
		}
	}
	return &Index{idx: idx, ref: ref, size: size}, nil
}

// readIndexHeader reads a saved index's table bits and reference size
// after its magic, and checks them against the reference's size.
func readIndexHeader(r io.ByteReader, size int64) (uint, error) {
	b, err := binary.ReadUvarint(r)
	if err != nil || b == 0 || b > maxTabBits {
		return 0, fmt.Errorf("%w: a saved index of %d bits", ErrPatch, b)
	}
	n, err := binary.ReadUvarint(r)
	if err != nil || int64(n) != size {
		return 0, fmt.Errorf("%w: the saved index is of %d bytes, the reference has %d", ErrReferenceSize, n, size)
	}
	return uint(b), nil
}

// countingByteReader counts the bytes read through it, from n.
type countingByteReader struct {
	r *bufio.Reader
	n int
}

func (c *countingByteReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// loadIndexFile is LoadIndex of the saved index f: where the system can,
// its table is used where the file is mapped into memory, neither read
// nor copied (a process that ends frees no heap for it), else it is read.
// The file must not change while the index is used: the store replaces
// a saved index by renaming a new one over it, never by writing it. old
// reports an index saved by version 1, which is worth saving again.
func loadIndexFile(f *os.File, ref io.ReaderAt, size int64) (x *Index, old bool, err error) {
	if x, ok := mapIndex(f, ref, size); ok {
		return x, false, nil
	}
	magic := make([]byte, len(indexMagicV1))
	_, _ = f.ReadAt(magic, 0)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, false, fmt.Errorf("read the saved index: %w", err)
	}
	x, err = LoadIndex(f, ref, size)
	return x, string(magic) == indexMagicV1, err
}

// mapIndex maps a version 2 saved index whose table has the size its
// header says; ok is false when it cannot (another version, another
// size, a system or byte order that does not allow it).
func mapIndex(f *os.File, ref io.ReaderAt, size int64) (*Index, bool) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, false // the table is little-endian
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() <= indexHeader || (fi.Size()-indexHeader)%8 != 0 {
		return nil, false
	}
	hdr := make([]byte, indexHeader)
	if _, err := f.ReadAt(hdr, 0); err != nil || string(hdr[:len(indexMagic)]) != indexMagic {
		return nil, false
	}
	b, err := readIndexHeader(bytes.NewReader(hdr[len(indexMagic):]), size)
	if err != nil || fi.Size() != indexHeader+8<<b {
		return nil, false
	}
	tab, unmap, ok := mapTable(f, fi.Size(), indexHeader)
	if !ok {
		return nil, false
	}
	return &Index{idx: &index{tab: tab, bits: b}, ref: ref, size: size, unmap: unmap}, true
}

// Diff writes to dst a patch that turns the indexed reference into the
// content of src, as the package's Diff does.
func (x *Index) Diff(ctx context.Context, dst io.Writer, src io.Reader) (DiffStats, error) {
	var st DiffStats
	idx, ref, refSize := x.idx, x.ref, x.size
	cw := &countWriter{w: dst}
	enc, err := newEncoder(LevelFastest)
	if err != nil {
		return st, err
	}
	enc.Reset(cw)
	bw := bufio.NewWriterSize(enc, 64<<10)
	d := &differ{idx: idx, ref: newPages(ref, refSize), out: bw, st: &st}
	d.putString(patchMagic)
	d.putUvarint(uint64(refSize))
	if err := d.run(ctx, src); err != nil {
		_ = enc.Close()
		return st, err
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("write patch: %w", err)
	}
	if err := enc.Close(); err != nil {
		return st, fmt.Errorf("write patch: %w", err)
	}
	st.Out = cw.n
	return st, nil
}

// index maps hashes of the reference's stride-aligned windows to their
// offsets: each entry is check<<32 | (offset/stride + 1), 0 when empty.
type index struct {
	tab  []uint64
	bits uint
}

func indexReference(ctx context.Context, ref io.ReaderAt, size int64, want string) (*index, error) {
	n := max(size/stride, 1)
	b := min(uint(bits.Len64(uint64(n))), maxTabBits)
	idx := &index{tab: newTable(b, true), bits: b}
	// The SHA-256 runs beside the indexing, a buffer behind it: two
	// buffers take turns, each handed to the hasher once indexed.
	h := sha256.New()
	bufs := [2][]byte{make([]byte, 1<<20), make([]byte, 1<<20)}
	toHash, hashed := make(chan []byte, 1), make(chan struct{}, 2)
	hashed <- struct{}{}
	hashed <- struct{}{}
	go func() {
		for b := range toHash {
			h.Write(b)
			hashed <- struct{}{}
		}
		close(hashed)
	}()
	finish := func() {
		close(toHash)
		for range hashed {
		}
	}
	var off int64
	for i := 0; off < size; i++ {
		if err := ctx.Err(); err != nil {
			finish()
			return nil, err
		}
		<-hashed // this buffer is free again
		buf := bufs[i%2]
		m, err := ref.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if m == 0 && err != nil {
			finish()
			return nil, fmt.Errorf("read the reference: %w", err)
		}
		// Windows that straddle two reads are left out: one in 32768.
		for j := 0; j+window <= m; j += stride {
			v := hashOf(buf[j : j+window])
			idx.tab[idx.slot(v)] = uint64(check(v))<<32 | uint64((off+int64(j))/stride+1)
		}
		toHash <- buf[:m]
		off += int64(m)
	}
	finish()
	if got := hex.EncodeToString(h.Sum(nil)); want != "" && got != want {
		return nil, fmt.Errorf("%w: SHA-256 %s, want %s", ErrReference, got, want)
	}
	return idx, nil
}

// spare is the table of the last index freed, kept for the next index
// of the same size: a run that loads the index of the node's file and
// then builds the new build's (about the same size) reuses the memory of
// the first rather than holding both until the garbage collector runs.
var spare struct {
	sync.Mutex
	tab []uint64
}

// newTable returns a table of 1<<bits entries, zeroed when clean.
func newTable(bits uint, clean bool) []uint64 {
	spare.Lock()
	t := spare.tab
	if len(t) == 1<<bits {
		spare.tab = nil
	}
	spare.Unlock()
	if len(t) != 1<<bits {
		return make([]uint64, 1<<bits)
	}
	if clean {
		clear(t)
	}
	return t
}

// free hands the index's table to the next index; x must not be used
// after.
func (x *Index) free() {
	if x == nil || x.idx == nil || x.idx.tab == nil {
		return
	}
	if x.unmap != nil {
		x.idx.tab = nil
		x.unmap()
		return
	}
	spare.Lock()
	spare.tab, x.idx.tab = x.idx.tab, nil
	spare.Unlock()
}

func (x *index) slot(v uint64) uint64 { return (v * 0x9E3779B97F4A7C15) >> (64 - x.bits) }
func check(v uint64) uint32           { return uint32(v>>32) ^ uint32(v) | 1 }

// hashOf is the polynomial hash of b's first window bytes,
// sum b[j]*hashMul^(window-1-j), as the rolling hash in segment computes
// it; four runs of eight bytes are summed apart so that their multiplies
// do not wait on each other.
func hashOf(b []byte) uint64 {
	b = b[:window]
	var v0, v1, v2, v3 uint64
	for j := range 8 {
		v0 = v0*hashMul + uint64(b[j])
		v1 = v1*hashMul + uint64(b[8+j])
		v2 = v2*hashMul + uint64(b[16+j])
		v3 = v3*hashMul + uint64(b[24+j])
	}
	return ((v0*hashMul8+v1)*hashMul8+v2)*hashMul8 + v3
}

// hashMul8 is hashMul^8 (mod 2^64, as every product here).
var hashMul8 = func() uint64 {
	v := uint64(1)
	for range 8 {
		v *= hashMul
	}
	return v
}()

// hashOut is hashMul^(window-1): the weight of the byte leaving the
// rolling hash.
var hashOut = func() uint64 {
	v := uint64(1)
	for range window - 1 {
		v *= hashMul
	}
	return v
}()

type differ struct {
	idx *index
	ref *pages
	out *bufio.Writer
	st  *DiffStats
	err error

	prevEnd int64 // reference offset where the previous copy ended
	rep     int64 // reference offset minus new offset of the last match
	repEnd  int64 // new offset where the last match ended (-1: none)
}

func (d *differ) run(ctx context.Context, src io.Reader) error {
	d.repEnd = -1
	buf := make([]byte, segment+window)
	var (
		bufStart int64 // new-file offset of buf[0]
		have     int   // bytes in buf
		total    int64
	)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := io.ReadFull(src, buf[have:])
		have += m
		total += int64(m)
		eof := err == io.EOF || err == io.ErrUnexpectedEOF
		if err != nil && !eof {
			return fmt.Errorf("read the new file: %w", err)
		}
		limit := have - window
		if eof {
			limit = have
		}
		done := d.segment(buf[:have], bufStart, max(limit, 0))
		if d.err != nil {
			return d.err
		}
		if eof {
			d.literal(buf[done:have])
			d.putByte(opEnd)
			d.putUvarint(uint64(total))
			return d.err
		}
		// done..have is carried over to the next segment.
		copy(buf, buf[done:have])
		have -= done
		bufStart += int64(done)
	}
}

// segment encodes buf (new-file offset base) up to limit and returns the
// index where it stopped: everything before it has been written.
func (d *differ) segment(buf []byte, base int64, limit int) int {
	lit := 0 // start of pending literals in buf
	i := 0
	var v uint64
	rolled := false
	for i < limit && d.err == nil {
		q := base + int64(i)
		p, ok := int64(0), false
		if d.repEnd >= 0 && q >= d.repEnd && q-d.repEnd <= repReach && i+8 <= len(buf) {
			p = q + d.rep
			ok = p >= 0 && p+8 <= d.ref.size && d.ref.equal(p, buf[i:i+8])
		}
		if !ok && i+window <= len(buf) {
			if rolled {
				v = (v-uint64(buf[i-1])*hashOut)*hashMul + uint64(buf[i+window-1])
			} else {
				v = hashOf(buf[i:])
			}
			rolled = true
			if e := d.idx.tab[d.idx.slot(v)]; e != 0 && uint32(e>>32) == check(v) {
				p = int64(uint32(e)-1) * stride
				ok = p+window <= d.ref.size && d.ref.equal(p, buf[i:i+window])
			}
		}
		if !ok {
			step := max(((i-lit)>>10)|1, 1)
			step = min(step, 63)
			if step > 1 {
				rolled = false
			}
			i += step
			continue
		}
		for i > lit && p > 0 && d.ref.byteAt(p-1) == buf[i-1] {
			i--
			p--
		}
		n := d.ref.commonPrefix(p, buf[i:])
		d.literal(buf[lit:i])
		d.copyOp(p, int64(n))
		i += n
		lit = i
		d.rep, d.repEnd = p-(base+int64(i-n)), base+int64(i)
		rolled = false
	}
	if d.ref.err != nil && d.err == nil {
		d.err = fmt.Errorf("read the reference: %w", d.ref.err)
	}
	d.literal(buf[lit:min(i, len(buf))])
	return min(i, len(buf))
}

func (d *differ) literal(b []byte) {
	for len(b) > 0 {
		n := min(len(b), maxLiteral)
		d.putByte(opLiteral)
		d.putUvarint(uint64(n))
		d.put(b[:n])
		d.st.Inserted += int64(n)
		b = b[n:]
	}
}

func (d *differ) copyOp(p, n int64) {
	d.putByte(opCopy)
	d.putUvarint(uint64(n))
	d.putVarint(p - d.prevEnd)
	d.prevEnd = p + n
	d.st.Copied += n
}

func (d *differ) put(b []byte) {
	if d.err == nil {
		if _, err := d.out.Write(b); err != nil {
			d.err = fmt.Errorf("write patch: %w", err)
		}
	}
}

func (d *differ) putByte(c byte)     { d.put([]byte{c}) }
func (d *differ) putString(s string) { d.put([]byte(s)) }
func (d *differ) putUvarint(v uint64) {
	d.put(binary.AppendUvarint(nil, v))
}
func (d *differ) putVarint(v int64) { d.put(binary.AppendVarint(nil, v)) }

// Patch errors.
var (
	// ErrPatch is a patch that is damaged or truncated.
	ErrPatch = errors.New("damaged patch")
	// ErrReferenceSize is a patch made against a reference of another size.
	ErrReferenceSize = errors.New("the patch was made against another file")
)

// ReferenceCopier is a destination of Apply that takes a copy from the
// reference itself: n bytes of ref at off, in place of their reading and
// writing (block cloning). It returns how many bytes it added.
type ReferenceCopier interface {
	CopyReference(ref io.ReaderAt, off, n int64) (int64, error)
}

// Apply writes to dst the file that patch makes of the reference (refSize
// bytes) and returns its length; a dst that is a ReferenceCopier is handed
// the copies from the reference. A damaged or truncated patch wraps
// ErrPatch; one made against a reference of another size wraps
// ErrReferenceSize. The result must still be verified by its SHA-256: a
// patch applied to a same-size but different reference is not detected
// here.
func Apply(dst io.Writer, ref io.ReaderAt, refSize int64, patch io.Reader) (int64, error) {
	zr, err := newDecoder(patch)
	if err != nil {
		return 0, err
	}
	defer zr.Close()
	br := bufio.NewReaderSize(zr, 64<<10)
	magic := make([]byte, len(patchMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != patchMagic {
		return 0, fmt.Errorf("%w: no patch header (%v)", ErrPatch, err)
	}
	size, err := binary.ReadUvarint(br)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrPatch, err)
	}
	if int64(size) != refSize {
		return 0, fmt.Errorf("%w: made against %d bytes, the file has %d", ErrReferenceSize, size, refSize)
	}
	var written, prevEnd int64
	cbuf := make([]byte, 256<<10)
	// A rebuilt program's patch copies thousands of short runs (6,854 of
	// the 6,905 copies between two builds of swdt.exe were under 64 KiB,
	// 1.5 MB of its 50 MB): those are read through a page cache, a few
	// hundred reads of the reference rather than one each.
	var refPages *pages
	for {
		op, err := br.ReadByte()
		if err != nil {
			return written, fmt.Errorf("%w: ends after %d bytes without its end mark: %w", ErrPatch, written, err)
		}
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return written, fmt.Errorf("%w: %w", ErrPatch, err)
		}
		switch op {
		case opEnd:
			if int64(n) != written {
				return written, fmt.Errorf("%w: promises %d bytes, made %d", ErrPatch, n, written)
			}
			return written, nil
		case opCopy:
			rel, err := binary.ReadVarint(br)
			if err != nil {
				return written, fmt.Errorf("%w: %w", ErrPatch, err)
			}
			p := prevEnd + rel
			if p < 0 || n > uint64(refSize) || p > refSize-int64(n) {
				return written, fmt.Errorf("%w: copies %d bytes at %d of a %d-byte file", ErrPatch, n, p, refSize)
			}
			var m int64
			if n < smallCopy {
				if refPages == nil {
					refPages = newPages(ref, refSize)
				}
				m, err = refPages.writeTo(dst, p, int64(n))
			} else if rc, ok := dst.(ReferenceCopier); ok {
				m, err = rc.CopyReference(ref, p, int64(n))
			} else {
				m, err = io.CopyBuffer(dst, io.NewSectionReader(ref, p, int64(n)), cbuf)
			}
			written += m
			if err != nil {
				return written, fmt.Errorf("copy from the reference: %w", err)
			}
			prevEnd = p + int64(n)
		case opLiteral:
			if n > maxLiteral {
				return written, fmt.Errorf("%w: insert of %d bytes", ErrPatch, n)
			}
			m, err := io.CopyN(dst, br, int64(n))
			written += m
			if err != nil {
				return written, fmt.Errorf("%w: insert cut short: %w", ErrPatch, err)
			}
		default:
			return written, fmt.Errorf("%w: unknown op %q", ErrPatch, op)
		}
	}
}

// pages reads a file at random offsets through a small FIFO cache of
// 64 KiB pages; a read error is kept in err and reads as no match.
type pages struct {
	r     io.ReaderAt
	size  int64
	cache map[int64][]byte
	fifo  []int64
	err   error
}

const (
	pageSize = 64 << 10
	maxPages = 128
	// smallCopy is the longest copy Apply reads through pages; longer
	// ones are read (or cloned) where they are.
	smallCopy = pageSize
)

func newPages(r io.ReaderAt, size int64) *pages {
	return &pages{r: r, size: size, cache: map[int64][]byte{}}
}

// at returns the cached bytes from p to the end of p's page.
func (c *pages) at(p int64) []byte {
	n := p / pageSize
	pg, ok := c.cache[n]
	if !ok {
		if len(c.fifo) >= maxPages {
			old := c.fifo[0]
			c.fifo = c.fifo[1:]
			pg = c.cache[old][:cap(c.cache[old])]
			delete(c.cache, old)
		} else {
			pg = make([]byte, pageSize)
		}
		m, err := c.r.ReadAt(pg[:min(pageSize, c.size-n*pageSize)], n*pageSize)
		if m < len(pg) && err != nil && err != io.EOF && c.err == nil {
			c.err = err
		}
		pg = pg[:m]
		c.cache[n] = pg
		c.fifo = append(c.fifo, n)
	}
	off := int(p - n*pageSize)
	if off >= len(pg) {
		return nil
	}
	return pg[off:]
}

// writeTo writes the file's n bytes from p to w.
func (c *pages) writeTo(w io.Writer, p, n int64) (int64, error) {
	var done int64
	for done < n {
		pg := c.at(p + done)
		if len(pg) == 0 {
			if c.err != nil {
				return done, c.err
			}
			return done, io.ErrUnexpectedEOF
		}
		k, err := w.Write(pg[:min(int64(len(pg)), n-done)])
		done += int64(k)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

func (c *pages) byteAt(p int64) byte {
	if b := c.at(p); len(b) > 0 {
		return b[0]
	}
	return 0
}

func (c *pages) equal(p int64, b []byte) bool { return c.commonPrefix(p, b) == len(b) }

// commonPrefix is how many leading bytes of b equal the file's from p.
func (c *pages) commonPrefix(p int64, b []byte) int {
	n := 0
	for n < len(b) && p+int64(n) < c.size {
		pg := c.at(p + int64(n))
		if len(pg) == 0 {
			return n
		}
		k := prefixLen(pg, b[n:])
		n += k
		if k < len(pg) {
			return n
		}
	}
	return n
}

// prefixLen is how many leading bytes a and b have in common. Long runs
// (a copy of the reference, most of a rebuild) are compared a chunk at a
// time with bytes.Equal, which uses the CPU's vector instructions; the
// chunk that differs is searched a word at a time.
func prefixLen(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+equalChunk <= n && bytes.Equal(a[i:i+equalChunk], b[i:i+equalChunk]); i += equalChunk {
	}
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < n && a[i] == b[i]; i++ {
	}
	return i
}
