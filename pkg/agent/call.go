package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// Call runs op with req against w exactly as one agent invocation does
// (request encoded to JSON, result envelope printed and parsed back), so a
// test sees what swdt would see over the wire; swdt running on a Hyper-V
// host runs the Hyper-V ops in its own process through it (pkg/vm). A
// failure the handler reports is returned as a *Failure with its kind and
// message.
func Call[Req, Resp any](ctx context.Context, w winos.OS, op ops.Op[Req, Resp], req Req) (Resp, error) {
	var resp Resp
	raw, err := json.Marshal(req)
	if err != nil {
		return resp, fmt.Errorf("encode request: %w", err)
	}
	var out bytes.Buffer
	Run(ctx, w, Self{Path: `C:\Program Files\swdt\swdt-agent-test.exe`}, []string{"op", op.Name}, bytes.NewReader(raw), &out, &out)
	env, err := ops.ParseEnvelope(out.Bytes())
	if err != nil {
		return resp, err
	}
	if !env.OK {
		return resp, &Failure{Kind: env.Error.Kind, Message: env.Error.Message}
	}
	if err := json.Unmarshal(env.Data, &resp); err != nil {
		return resp, fmt.Errorf("decode result: %w", err)
	}
	return resp, nil
}
