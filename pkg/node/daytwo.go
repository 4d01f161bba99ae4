package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
)

// Exec runs a program on the node: command[0] (a full path, or a name
// looked up in sshd's PATH) with command[1:] as its arguments, each passed
// as data, never through a shell. Its stdout and stderr are copied to
// stdout and stderr as it writes them. The agent stops it after timeout;
// ctx bounds the whole call.
func (n *Node) Exec(ctx context.Context, command []string, timeout time.Duration, stdout, stderr io.Writer) (ops.ExecResponse, error) {
	var resp ops.ExecResponse
	path := n.agent()
	if path == "" {
		// Not the optimistic run of call: a missing agent would show the
		// shell's complaint in the user's output.
		p, _, err := n.deliver(ctx, time.Now())
		if err != nil {
			return resp, err
		}
		path = p
	}
	req, err := json.Marshal(ops.ExecRequest{Command: command, TimeoutMs: int(timeout / time.Millisecond)})
	if err != nil {
		return resp, fmt.Errorf("op %s: encode request: %w", ops.Exec.Name, err)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errOut := &resultFilter{w: stderr, cancel: cancel}
	cmd := ops.CommandLine(path, ops.Exec.Name)
	status, err := n.conn.Exec(ctx, cmd, bytes.NewReader(req), stdout, errOut)
	if lerr := limited(ctx); lerr != nil {
		return resp, lerr
	}
	if err == nil {
		err = errOut.flush()
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return resp, n.transportError(ops.Exec.Name, cmd, err)
	}
	raw, err := n.result(path, ops.Exec.Name, status, errOut.line, "", "")
	if err != nil {
		return resp, err
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return resp, fmt.Errorf("op %s: decode result: %w", ops.Exec.Name, err)
	}
	return resp, nil
}

// ServiceLogs reads a service's log: see ops.ServiceLogsRequest.
func (n *Node) ServiceLogs(ctx context.Context, req ops.ServiceLogsRequest) (ops.ServiceLogsResponse, error) {
	return call(ctx, n, ops.ServiceLogs, req, n.Timeouts.query())
}

// resultFilter passes a streaming op's stderr through to w, all but its
// result line, which it keeps. A line is held back only while it could
// still turn out to be the result line, and only up to MaxStderr: a
// longer one ends the op (cancel, with an *OutputLimitError as cause).
type resultFilter struct {
	w       io.Writer
	cancel  context.CancelCauseFunc
	pending []byte
	line    []byte
	// midLine is true when the start of the pending line was passed
	// through already: it cannot be the result line.
	midLine bool
	// over is true once the held-back line went past MaxStderr; what
	// comes after is dropped.
	over bool
}

var marker = []byte(ops.ResultMarker)

func (f *resultFilter) Write(p []byte) (int, error) {
	if f.over {
		return len(p), nil
	}
	f.pending = append(f.pending, p...)
	for {
		i := bytes.IndexByte(f.pending, '\n')
		if i < 0 {
			break
		}
		if err := f.emit(f.pending[:i+1]); err != nil {
			return 0, err
		}
		f.pending, f.midLine = f.pending[i+1:], false
	}
	if len(f.pending) > 0 && (f.midLine || !bytes.HasPrefix(f.pending, marker) && !bytes.HasPrefix(marker, f.pending)) {
		if _, err := f.w.Write(f.pending); err != nil {
			return 0, err
		}
		f.pending, f.midLine = f.pending[:0], true
	}
	if len(f.pending) > MaxStderr {
		f.pending, f.over = nil, true
		f.cancel(&OutputLimitError{Op: ops.Exec.Name, Stream: "stderr", Limit: MaxStderr})
	}
	return len(p), nil
}

// emit passes one whole line through, or keeps it as the result line.
func (f *resultFilter) emit(line []byte) error {
	if !f.midLine && bytes.HasPrefix(line, marker) {
		f.line = append(f.line[:0], line...)
		return nil
	}
	_, err := f.w.Write(line)
	return err
}

// flush handles what is left when the stream ends.
func (f *resultFilter) flush() error {
	if len(f.pending) == 0 {
		return nil
	}
	err := f.emit(f.pending)
	f.pending = nil
	if err != nil {
		return fmt.Errorf("write stderr: %w", err)
	}
	return nil
}
