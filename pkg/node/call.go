package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
)

// TransportError is an op the node's connection did not run to its end:
// the connection was lost, could not start the op, or the op was
// cancelled. It names the op and the node; the command line that ran the
// op is only in the debug log.
type TransportError struct {
	// Node is the node's name; Op the op's.
	Node, Op string
	// Err is the transport's error (remote.ErrConnectionLost, a
	// context's error...).
	Err error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("op %s on node %s: %v", e.Op, e.Node, e.Err)
}

// Unwrap returns the transport's error.
func (e *TransportError) Unwrap() error { return e.Err }

// transportError is the *TransportError of op name's err, logged at debug
// level with the command line that ran it (cmd; "" when none ran).
func (n *Node) transportError(name, cmd string, err error) error {
	n.logger.Debug("op did not complete", "op", name, "cmd", cmd, "err", err)
	return &TransportError{Node: n.Name, Op: name, Err: err}
}

// run runs op with req (and its attachments, nil: none) through the
// agent at path and decodes its result. A failure the agent reports is an
// *ops.Error; transport failures are *TransportError.
func run[Req, Resp any](ctx context.Context, n *Node, path string, op ops.Op[Req, Resp], req Req, attachments io.Reader) (Resp, error) {
	var resp Resp
	if err := ctx.Err(); err != nil {
		return resp, n.transportError(op.Name, "", err)
	}
	raw, err := n.execWith(ctx, path, op.Name, req, attachments)
	if err != nil {
		return resp, err
	}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &resp); err != nil {
			return resp, fmt.Errorf("op %s: decode result: %w", op.Name, err)
		}
	}
	return resp, nil
}

// execWith runs one op with the agent at path and returns its result
// data; attachments, when not nil, follow the request on its stdin (the
// request, a newline and the attachments: ops.TakesAttachments).
func (n *Node) execWith(ctx context.Context, path, name string, req any, attachments io.Reader) (json.RawMessage, error) {
	params, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("op %s: encode request: %w", name, err)
	}
	if n.logger.Enabled(ctx, slog.LevelDebug) {
		n.logger.Debug("run op", "op", name, "params", logged(ops.Redacted(req)))
	}
	var stdin io.Reader = bytes.NewReader(params)
	if attachments != nil {
		stdin = io.MultiReader(stdin, strings.NewReader("\n"), attachments)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stdout, stderr := newCapBuffer(name, "stdout", MaxReply, cancel), newCapBuffer(name, "stderr", MaxStderr, cancel)
	start := time.Now()
	cmd := ops.CommandLine(path, name)
	defer n.opRunning(name)()
	status, err := n.conn.Exec(ctx, cmd, stdin, stdout, stderr)
	n.logger.Info("op", "op", name, "duration", time.Since(start).Round(time.Millisecond), "exit", status)
	if lerr := limited(ctx); lerr != nil {
		return nil, lerr
	}
	if err != nil {
		return nil, n.transportError(name, cmd, err)
	}
	if err := ctx.Err(); err != nil {
		// The transport may return a clean exit for a session torn down
		// by the cancellation; the output is then not to be trusted.
		return nil, n.transportError(name, cmd, err)
	}
	return n.result(path, name, status, stdout.Bytes(), stdout.String(), stderr.String())
}

// result decodes an op's result line, printed by the agent at path, from
// where it was printed and returns its data, or an *ops.Error with the
// rest of the output as detail.
func (n *Node) result(path, name string, status int, printed []byte, stdout, stderr string) (json.RawMessage, error) {
	env, perr := ops.ParseEnvelope(printed)
	if perr == nil {
		n.agentRan(path, env.ImageModTime, env.ImageSize)
	}
	stderr = tail(strings.TrimSpace(stderr), maxShownStderr)
	if perr != nil {
		detail := stderr
		if detail == "" {
			detail = tail(stdout, 2000)
		}
		err := &ops.Error{Op: name, Kind: ops.KindProtocol, Message: fmt.Sprintf("%v (exit status %d)", perr, status), Stderr: detail}
		if n.agentSilent(path) {
			return nil, fmt.Errorf("%w\nswdt-agent was just uploaded to %s and did not answer as the agent: "+
				"the next run reads it back and uploads it again if it is not; run again", err, path)
		}
		return nil, err
	}
	if !env.OK {
		return nil, &ops.Error{Op: name, Kind: env.Error.Kind, Message: env.Error.Message, Stderr: stderr}
	}
	return env.Data, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// maxLogged bounds a request in the debug log: a swap may carry a patch.
const maxLogged = 4 << 10

// logged is params as the debug log shows them: cut after maxLogged
// bytes, saying how long it was.
func logged(params []byte) string {
	if len(params) <= maxLogged {
		return string(params)
	}
	return fmt.Sprintf("%s... (%d bytes)", params[:maxLogged], len(params))
}
