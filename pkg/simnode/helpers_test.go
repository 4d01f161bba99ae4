package simnode

import (
	"errors"
	"io"

	"sigs.k8s.io/swdt/pkg/ops"
)

func ioPipe() (*io.PipeReader, *io.PipeWriter) { return io.Pipe() }

// kinder is implemented by simnode's own errors (service and file errors)
// so that a handler may return them unchanged and still produce a useful
// error kind.
type kinder interface{ OpErrorKind() ops.Kind }

// failureOf turns any handler error into the envelope's kind and message.
// Unknown errors are "exception", as an uncaught PowerShell exception.
func failureOf(err error) (kind ops.Kind, message string) {
	var f *OpFailure
	if errors.As(err, &f) {
		return f.Kind, f.Message
	}
	var k kinder
	if errors.As(err, &k) {
		return k.OpErrorKind(), err.Error()
	}
	return ops.KindException, err.Error()
}
