package node

import (
	"context"

	"sigs.k8s.io/swdt/pkg/ops"
)

// InspectWins reads the rancher-wins service, wins' config file and its
// orphaned host processes.
func (n *Node) InspectWins(ctx context.Context, configPath string) (ops.WinsInspectResponse, error) {
	return call(ctx, n, ops.WinsInspect, ops.WinsInspectRequest{ConfigPath: configPath}, n.Timeouts.query())
}

// WriteWinsConfig writes wins' config file when its content differs.
func (n *Node) WriteWinsConfig(ctx context.Context, path, content string) (ops.WinsConfigWriteResponse, error) {
	return call(ctx, n, ops.WinsConfigWrite, ops.WinsConfigWriteRequest{Path: path, Content: content}, n.Timeouts.query())
}

// RegisterWins registers the rancher-wins service from req.Binary (with
// req.ConfigPath as its config), or removes it when req.Unregister is set.
func (n *Node) RegisterWins(ctx context.Context, req ops.WinsRegisterRequest) (ops.WinsRegisterResponse, error) {
	return call(ctx, n, ops.WinsRegister, req, n.Timeouts.service())
}

// StopWinsOrphans stops rancher-wins-* host processes.
func (n *Node) StopWinsOrphans(ctx context.Context) ([]ops.Process, error) {
	resp, err := call(ctx, n, ops.WinsOrphansStop, ops.WinsOrphansStopRequest{}, n.Timeouts.query())
	return resp.Stopped, err
}

// VerifyWins checks the wins bridge on the node.
func (n *Node) VerifyWins(ctx context.Context, req ops.WinsVerifyRequest) (ops.WinsVerifyResponse, error) {
	return call(ctx, n, ops.WinsVerify, req, n.Timeouts.service())
}

// UninstallWins removes the wins service, binary and config.
func (n *Node) UninstallWins(ctx context.Context, binary, configPath string) (ops.WinsUninstallResponse, error) {
	return call(ctx, n, ops.WinsUninstall, ops.WinsUninstallRequest{Binary: binary, ConfigPath: configPath}, n.Timeouts.service())
}
