package simos

import (
	"io"
	"os"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/swdt/pkg/winos"
)

// damageEncoded applies Faults.DamageEncoded to f when p is an encoded
// upload, and clears the fault: the agent then reads a truncated or
// corrupted stream, as after a bad transfer that SFTP did not notice.
func (n *Node) damageEncoded(p string, f *os.File) winos.File {
	if !ops.IsEncodedPath(p) {
		return f
	}
	kind := n.Faults().DamageEncoded
	if kind == "" {
		return f
	}
	_ = n.UpdateFaults(func(cur *machine.Faults) { cur.DamageEncoded = "" })
	fi, err := f.Stat()
	if err != nil {
		return f
	}
	d := &damagedFile{f: f, size: fi.Size(), flipAt: -1}
	switch kind {
	case "truncate":
		d.size /= 2
	default: // "corrupt"
		d.flipAt = d.size / 2
	}
	d.sr = io.NewSectionReader(d, 0, d.size)
	return d
}

// damagedFile reads f cut at size and with the byte at flipAt inverted.
type damagedFile struct {
	f      *os.File
	sr     *io.SectionReader
	size   int64
	flipAt int64
}

func (d *damagedFile) Read(p []byte) (int, error) { return d.sr.Read(p) }

func (d *damagedFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= d.size {
		return 0, io.EOF
	}
	if int64(len(p)) > d.size-off {
		p = p[:d.size-off]
	}
	n, err := d.f.ReadAt(p, off)
	if d.flipAt >= off && d.flipAt < off+int64(n) {
		p[d.flipAt-off] ^= 0xff
	}
	if err == nil && off+int64(n) == d.size {
		err = io.EOF
	}
	return n, err
}

func (d *damagedFile) Close() error { return d.f.Close() }
