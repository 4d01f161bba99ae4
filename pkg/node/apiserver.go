package node

import (
	"context"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
)

// ProbeAPIServer connects from the node to the API server at req.Server
// (TCP, then TLS verified against req.CA for its host name), as the
// node's kubelet will. The op is bounded by its own timeout plus the
// query timeout.
func (n *Node) ProbeAPIServer(ctx context.Context, req ops.APIServerProbeRequest) (ops.APIServerProbeResponse, error) {
	probe := time.Duration(req.TimeoutMillis) * time.Millisecond
	if req.TimeoutMillis <= 0 || req.TimeoutMillis > ops.APIServerProbeMaxTimeout {
		probe = ops.APIServerProbeMaxTimeout * time.Millisecond
	}
	return call(ctx, n, ops.APIServerProbe, req, probe+n.Timeouts.query())
}
