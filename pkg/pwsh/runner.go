package pwsh

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

// Execer runs one command on the node. pkg/remote's client implements it;
// tests may use a fake. stdin is closed (EOF) once fully written; Exec
// returns the remote exit status.
type Execer interface {
	Exec(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
}

// Runner runs ops over an Execer.
type Runner struct {
	// Exec runs the command line on the node.
	Exec Execer
	// Logger receives op names and parameters at debug level (never
	// secrets: requests must not carry any). Nil discards.
	Logger *slog.Logger
}

// Call runs op with req on the node and decodes its result into a Resp. A
// failure reported by the op is an *OpError; transport failures are
// returned wrapped.
func Call[Req, Resp any](ctx context.Context, r *Runner, op ops.Op[Req, Resp], req Req) (Resp, error) {
	var resp Resp
	raw, err := r.run(ctx, op.Name, req)
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

func (r *Runner) run(ctx context.Context, name string, req any) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("op %s: %w", name, err)
	}
	body, err := ops.Script(name)
	if err != nil {
		return nil, err
	}
	script, err := BuildScript(name, body, req)
	if err != nil {
		return nil, fmt.Errorf("op %s: %w", name, err)
	}
	if r.Logger != nil {
		params, _ := json.Marshal(req)
		r.Logger.Debug("run op", "op", name, "params", string(params))
	}
	var stdout, stderr bytes.Buffer
	status, err := r.Exec.Exec(ctx, CommandLine(), bytes.NewReader(script), &stdout, &stderr)
	if err != nil {
		return nil, fmt.Errorf("op %s: %w", name, err)
	}
	if err := ctx.Err(); err != nil {
		// The transport may return a clean exit for a session torn down
		// by the cancellation; the output is then not to be trusted.
		return nil, fmt.Errorf("op %s: %w", name, err)
	}
	env, perr := ParseEnvelope(stdout.Bytes())
	if perr != nil {
		detail := DecodeCLIXML(stderr.String())
		if detail == "" {
			detail = tail(stdout.String(), 2000)
		}
		return nil, &OpError{Op: name, Kind: "protocol", Message: fmt.Sprintf("%v (exit status %d)", perr, status), Stderr: detail}
	}
	if !env.OK {
		return nil, &OpError{Op: name, Kind: env.Error.Kind, Message: env.Error.Message, Stderr: DecodeCLIXML(stderr.String())}
	}
	return env.Data, nil
}

// OpError is an op that ran and reported failure, or whose output could not
// be understood.
type OpError struct {
	// Op is the op's name.
	Op string
	// Kind is the op's error class ("not-found", "timeout", "protocol"...).
	Kind string
	// Message is the op's own explanation.
	Message string
	// Stderr is the decoded stderr of the op, if any.
	Stderr string
}

func (e *OpError) Error() string {
	msg := fmt.Sprintf("op %s failed (%s): %s", e.Op, e.Kind, e.Message)
	if e.Stderr != "" {
		msg += "\n" + e.Stderr
	}
	return msg
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
