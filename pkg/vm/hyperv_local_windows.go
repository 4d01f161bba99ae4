//go:build windows

package vm

import (
	"context"
	"errors"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// localHyperV is this machine as the Hyper-V host: swdt-agent's Hyper-V
// handlers run in this process against the real Windows layer, with no
// agent to deliver.
func localHyperV(*hypervVM) (hypervHost, error) {
	return localHost{w: winos.New()}, nil
}

// localHost runs the Hyper-V ops in this process.
type localHost struct{ w winos.OS }

// localCall runs op as the agent would, and reports a failure the
// handler names as the *ops.Error a remote host's would be.
func localCall[Req, Resp any](ctx context.Context, w winos.OS, op ops.Op[Req, Resp], req Req) (Resp, error) {
	resp, err := agent.Call(ctx, w, op, req)
	var f *agent.Failure
	if errors.As(err, &f) {
		return resp, &ops.Error{Op: op.Name, Kind: f.Kind, Message: f.Message}
	}
	return resp, err
}

func (h localHost) HyperVVMStatus(ctx context.Context, req ops.HyperVVMRequest) (ops.HyperVVMInfo, error) {
	return localCall(ctx, h.w, ops.HyperVVMStatus, req)
}

func (h localHost) HyperVVMStart(ctx context.Context, req ops.HyperVVMRequest) (ops.HyperVStartResponse, error) {
	return localCall(ctx, h.w, ops.HyperVVMStart, req)
}

func (h localHost) HyperVVMStop(ctx context.Context, req ops.HyperVStopRequest) (ops.HyperVStopResponse, error) {
	return localCall(ctx, h.w, ops.HyperVVMStop, req)
}

func (h localHost) HyperVCheckpointCreate(ctx context.Context, req ops.HyperVCheckpointRequest) (ops.HyperVCheckpoint, error) {
	return localCall(ctx, h.w, ops.HyperVCheckpointCreate, req)
}

func (h localHost) HyperVCheckpointRestore(ctx context.Context, req ops.HyperVCheckpointRequest) (ops.HyperVVMInfo, error) {
	return localCall(ctx, h.w, ops.HyperVCheckpointRestore, req)
}

func (h localHost) HyperVCheckpointList(ctx context.Context, req ops.HyperVVMRequest) (ops.HyperVCheckpointsResponse, error) {
	return localCall(ctx, h.w, ops.HyperVCheckpointList, req)
}

func (h localHost) HyperVVMAddresses(ctx context.Context, req ops.HyperVVMRequest) (ops.HyperVAddressesResponse, error) {
	return localCall(ctx, h.w, ops.HyperVVMAddresses, req)
}

// Close has nothing to end: no connection was opened.
func (localHost) Close() error { return nil }
