// Package agent is swdt-agent: the Go implementation of every node op.
// One invocation runs one op (`swdt-agent op NAME`): the JSON request on
// stdin, one result envelope (ops.Envelope) on stdout, exit status 0 or 1.
//
// Handlers decide everything (order, waits, retries, rollback, what counts
// as healthy) and touch the machine only through winos.OS. On a node that
// is winos' real Windows layer; in every test, the demo and the bench it is
// simnode's simulated one, so the logic under test is the logic that runs
// on Windows. A handler never prints and never reads anything but its
// request.
package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// Self describes the running agent.
type Self struct {
	// Path is the agent executable's full path.
	Path string
}

// invocation is one run of the agent as a handler sees it.
type invocation struct {
	Self
	// Stdout and Stderr are the agent's own, for a streaming op to pass
	// a program's output through as it is written.
	Stdout, Stderr io.Writer
	// Attachments is the rest of stdin after the request line, for an op
	// that takes attachments (ops.TakesAttachments); nil for the others.
	Attachments *bufio.Reader
}

// handler runs one op from its raw JSON request.
type handler func(ctx context.Context, w winos.OS, inv invocation, raw json.RawMessage) (any, error)

// handle binds a typed handler function to its op.
func handle[Req, Resp any](op ops.Op[Req, Resp], fn func(ctx context.Context, w winos.OS, req Req) (Resp, error)) entry {
	return entry{name: op.Name, run: func(ctx context.Context, w winos.OS, _ invocation, raw json.RawMessage) (any, error) {
		req, err := decodeRequest[Req](op.Name, raw)
		if err != nil {
			return nil, err
		}
		return fn(ctx, w, req)
	}}
}

// handleAttached binds a typed handler function to an op that takes
// attachments after its request (ops.TakesAttachments).
func handleAttached[Req, Resp any](op ops.Op[Req, Resp], fn func(ctx context.Context, w winos.OS, req Req, attachments *bufio.Reader) (Resp, error)) entry {
	return entry{name: op.Name, run: func(ctx context.Context, w winos.OS, inv invocation, raw json.RawMessage) (any, error) {
		req, err := decodeRequest[Req](op.Name, raw)
		if err != nil {
			return nil, err
		}
		return fn(ctx, w, req, inv.Attachments)
	}}
}

// handleStreaming binds a handler whose op streams output (ops.Streams):
// it writes to the agent's stdout and stderr as it goes, and its result
// envelope follows last, on stderr.
func handleStreaming[Req, Resp any](op ops.Op[Req, Resp], fn func(ctx context.Context, w winos.OS, stdout, stderr io.Writer, req Req) (Resp, error)) entry {
	return entry{name: op.Name, streams: true, run: func(ctx context.Context, w winos.OS, inv invocation, raw json.RawMessage) (any, error) {
		req, err := decodeRequest[Req](op.Name, raw)
		if err != nil {
			return nil, err
		}
		return fn(ctx, w, inv.Stdout, inv.Stderr, req)
	}}
}

func decodeRequest[Req any](name string, raw json.RawMessage) (Req, error) {
	var req Req
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &req); err != nil {
			return req, Fail(ops.KindBadRequest, "op %s: decode request: %v", name, err)
		}
	}
	return req, nil
}

type entry struct {
	name    string
	run     handler
	streams bool
}

// handlers maps every op of the catalogue to its handler.
var handlers = func() map[string]entry {
	m := map[string]entry{}
	for _, group := range [][]entry{provisionOps, lockOps, setupOps, winsOps, dayTwoOps, hypervOps, restartOps, joinOps, probeOps, undoOps} {
		for _, e := range group {
			if m[e.name].run != nil {
				panic("agent: two handlers for op " + e.name)
			}
			if e.streams != ops.Streams(e.name) {
				panic("agent: op " + e.name + " streams in the catalogue but not in its handler, or the other way round")
			}
			m[e.name] = e
		}
	}
	return m
}()

// Has reports whether the agent has a handler for op name.
func Has(name string) bool { return handlers[name].run != nil }

// Run runs one invocation: args are the command-line arguments after the
// program name (`op NAME`). It reads the whole request from stdin, writes
// the result envelope to stdout (to stderr, last, for an op that streams)
// and returns the exit status.
func Run(ctx context.Context, w winos.OS, self Self, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	dest := stdout
	if len(args) == 2 && handlers[args[1]].streams {
		ends := &lineEnd{w: stderr, ended: true}
		dest, stderr = ends, ends
	}
	env := run(ctx, w, invocation{Self: self, Stdout: stdout, Stderr: stderr}, args, stdin)
	if fi, err := w.Stat(self.Path); err == nil {
		env.ImageModTime = fi.ModTime.UnixNano()
		env.ImageSize = fi.Size
	}
	line, err := ops.FormatEnvelope(env)
	if err != nil {
		line, _ = ops.FormatEnvelope(ops.Envelope{Error: &ops.EnvelopeError{Kind: ops.KindException, Message: err.Error()}})
	}
	if e, ok := dest.(*lineEnd); ok && !e.ended {
		// The result line must start a line of its own.
		line = append([]byte("\r\n"), line...)
	}
	if _, err := dest.Write(line); err != nil || !env.OK {
		return 1
	}
	return 0
}

// lineEnd passes writes through and remembers whether the last one ended
// a line.
type lineEnd struct {
	w     io.Writer
	ended bool
}

func (l *lineEnd) Write(p []byte) (int, error) {
	if len(p) > 0 {
		l.ended = p[len(p)-1] == '\n'
	}
	return l.w.Write(p)
}

func run(ctx context.Context, w winos.OS, inv invocation, args []string, stdin io.Reader) ops.Envelope {
	failed := func(err error) ops.Envelope {
		kind, msg := failureOf(err)
		return ops.Envelope{Error: &ops.EnvelopeError{Kind: kind, Message: msg}}
	}
	if len(args) != 2 || args[0] != "op" {
		return failed(Fail(ops.KindUsage, "usage: swdt-agent op NAME (request as JSON on stdin); this program is run by swdt, see `swdt --help`"))
	}
	h := handlers[args[1]].run
	if h == nil {
		return failed(Fail(ops.KindUnknownOp, "this swdt-agent has no op %q: swdt and the agent on the node disagree; run swdt again to update the agent", args[1]))
	}
	raw, attachments, err := readRequest(args[1], stdin)
	if err != nil {
		return failed(Fail(ops.KindBadRequest, "read request from stdin: %v", err))
	}
	inv.Attachments = attachments
	if len(bytes.TrimSpace(raw)) == 0 {
		// swdt sends every request as JSON ("{}" at least); an op started
		// ahead whose request was never sent ends here, having done
		// nothing.
		return failed(Fail(ops.KindBadRequest, "op %s: no request on stdin, nothing was done (swdt sends one as JSON)", args[1]))
	}
	data, err := safely(ctx, h, busyOS{OS: w, ctx: ctx}, inv, raw)
	if err != nil {
		return failed(err)
	}
	out, err := json.Marshal(data)
	if err != nil {
		return failed(fmt.Errorf("encode result: %w", err))
	}
	return ops.Envelope{OK: true, Data: out}
}

// readRequest reads op name's request from stdin: all of it, or for an
// op that takes attachments its first line, the rest left to read.
func readRequest(name string, stdin io.Reader) (json.RawMessage, *bufio.Reader, error) {
	if !ops.TakesAttachments(name) {
		raw, err := io.ReadAll(stdin)
		return raw, nil, err
	}
	br := bufio.NewReaderSize(stdin, 256<<10)
	raw, err := br.ReadBytes('\n')
	if err == io.EOF {
		err = nil // a request with nothing after it
	}
	return raw, br, err
}

// safely turns a handler panic into an "exception" failure: the agent
// must always print an envelope.
func safely(ctx context.Context, h handler, w winos.OS, inv invocation, raw json.RawMessage) (data any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = Fail(ops.KindException, "swdt-agent: internal error: %v", r)
		}
	}()
	return h(ctx, w, inv, raw)
}

// Failure is a handler's typed failure: it becomes the envelope's error
// kind and message.
type Failure struct {
	Kind    ops.Kind
	Message string
}

func (e *Failure) Error() string { return string(e.Kind) + ": " + e.Message }

// Is reports whether target is the failure's kind, so that
// errors.Is(err, ops.KindNotFound) works on a *Failure as on an
// *ops.Error.
func (e *Failure) Is(target error) bool {
	k, ok := target.(ops.Kind)
	return ok && k == e.Kind
}

// Fail returns a *Failure of kind with a formatted message.
func Fail(kind ops.Kind, format string, args ...any) error {
	return &Failure{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// failureOf turns any handler error into the envelope's kind and message:
// a *Failure as it is, a winos error by its Win32 code, a context error as
// a timeout, anything else as an exception.
func failureOf(err error) (kind ops.Kind, message string) {
	var f *Failure
	if errors.As(err, &f) {
		return f.Kind, f.Message
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return ops.KindTimeout, err.Error()
	}
	switch winos.Code(err) {
	case winos.ErrFileNotFound, winos.ErrPathNotFound, winos.ErrServiceDoesNotExist:
		return ops.KindNotFound, err.Error()
	case winos.ErrSharingViolation:
		return ops.KindLocked, err.Error()
	case winos.ErrAccessDenied:
		return ops.KindAccessDenied, err.Error()
	case winos.ErrFileExists, winos.ErrAlreadyExists, winos.ErrServiceExists:
		return ops.KindExists, err.Error()
	case 0:
	default:
		if strings.HasPrefix(err.Error(), "service") || winos.Code(err) >= 1051 && winos.Code(err) <= 1083 {
			return ops.KindService, err.Error()
		}
		return ops.KindIO, err.Error()
	}
	if errors.Is(err, fs.ErrNotExist) {
		return ops.KindNotFound, err.Error()
	}
	return ops.KindException, err.Error()
}
