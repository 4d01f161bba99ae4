package ops

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Attachments: an op that takes them (service-swap) reads its request as
// the first line of its stdin (the JSON, which has no newline of its
// own), and then, for each item that says so (SwapItem.Attached), in
// order, that item's encoded bytes as they are made: frames of a uvarint
// length and that many bytes, ended by a zero length and a status byte
// (AttachmentOK, or AttachmentFailed when the sender could not finish
// it). A patch made while the op already runs thus travels in the op's
// own input, and the node decodes it as it arrives.
const (
	// AttachmentOK ends an attachment that is complete.
	AttachmentOK byte = 0
	// AttachmentFailed ends one its sender could not finish: the item
	// does not decode (its caller may send it again another way).
	AttachmentFailed byte = 1
)

// maxFrame bounds one frame of an attachment.
const maxFrame = 1 << 20

// ErrAttachmentFailed is an attachment its sender ended as failed.
var ErrAttachmentFailed = errors.New("the sender could not finish the attachment")

// TakesAttachments reports whether op name reads attachments after its
// request line.
func TakesAttachments(name string) bool { return name == ServiceSwap.Name }

// WriteAttachment writes what r gives as one attachment to w: complete
// when r ends with io.EOF, failed when r fails (its error is returned,
// after the failed attachment is written). An error writing to w is
// returned as it is.
func WriteAttachment(w io.Writer, r io.Reader) error {
	buf := make([]byte, 64<<10)
	var hdr [binary.MaxVarintLen64]byte
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			h := binary.PutUvarint(hdr[:], uint64(n))
			if _, err := w.Write(hdr[:h]); err != nil {
				return err
			}
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
		}
		switch {
		case rerr == io.EOF:
			_, err := w.Write([]byte{0, AttachmentOK})
			return err
		case rerr != nil:
			if _, err := w.Write([]byte{0, AttachmentFailed}); err != nil {
				return err
			}
			return rerr
		}
	}
}

// AttachmentReader reads one attachment from r: its bytes, then io.EOF
// at its end, ErrAttachmentFailed when its sender ended it so, and
// io.ErrUnexpectedEOF when the input ends inside it.
func AttachmentReader(r *bufio.Reader) io.Reader { return &attachment{r: r} }

type attachment struct {
	r    *bufio.Reader
	left uint64 // bytes left in the current frame
	err  error  // set at the attachment's end
}

func (a *attachment) Read(p []byte) (int, error) {
	if a.err != nil {
		return 0, a.err
	}
	if a.left == 0 {
		n, err := binary.ReadUvarint(a.r)
		if err != nil {
			a.err = unexpected(err)
			return 0, a.err
		}
		if n == 0 {
			status, err := a.r.ReadByte()
			switch {
			case err != nil:
				a.err = unexpected(err)
			case status == AttachmentOK:
				a.err = io.EOF
			case status == AttachmentFailed:
				a.err = ErrAttachmentFailed
			default:
				a.err = fmt.Errorf("an attachment ended with status %d", status)
			}
			return 0, a.err
		}
		if n > maxFrame {
			a.err = fmt.Errorf("an attachment frame of %d bytes (at most %d)", n, maxFrame)
			return 0, a.err
		}
		a.left = n
	}
	if uint64(len(p)) > a.left {
		p = p[:a.left]
	}
	n, err := a.r.Read(p)
	a.left -= uint64(n)
	if err != nil {
		a.err = unexpected(err)
		return n, a.err
	}
	return n, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
