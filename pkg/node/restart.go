package node

import (
	"context"

	"sigs.k8s.io/swdt/pkg/ops"
)

// RestartServices stops and starts services, their dependents with them,
// and runs their health checks (see ops.ServiceRestart). It is bounded as
// a swap of the same services is.
func (n *Node) RestartServices(ctx context.Context, req ops.ServiceRestartRequest) (ops.ServiceRestartResponse, error) {
	return call(ctx, n, ops.ServiceRestart, req, SwapBudget(ops.ServiceSwapRequest{
		StopOrder: req.Services, StartOrder: req.Services, StopTimeoutMs: req.StopTimeoutMs,
		StartTimeoutMs: req.StartTimeoutMs, SettleMs: req.SettleMs, HealthTimeoutMs: req.HealthTimeoutMs,
	}))
}

// Reboot asks Windows to restart the node after req.DelaySeconds and
// returns at once; Dropped then tells when the node went down.
func (n *Node) Reboot(ctx context.Context, req ops.NodeRebootRequest) (ops.NodeRebootResponse, error) {
	return call(ctx, n, ops.NodeReboot, req, n.Timeouts.query())
}

// ServiceStatus reads services' status, start type and process.
func (n *Node) ServiceStatus(ctx context.Context, services []string) ([]ops.ServiceState, error) {
	resp, err := call(ctx, n, ops.ServiceStatus, ops.ServiceStatusRequest{Services: services}, n.Timeouts.query())
	return resp.Services, err
}
