package provision

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/target"
)

// The cluster check of a kubelet swap (DESIGN.md §4.3): on a node whose
// file has spec.kubernetes.join, a kubelet swap the service accepted is
// proven by the cluster too. Before the services stop, the Node is read;
// after the swap, swdt waits for the Node to report the new build's
// kubeletVersion (when the provisioner's version is set), for its Lease
// to be renewed after the swap (a renewal after the one seen right after
// the swap: the old kubelet had exited by then), and for it to be Ready
// when it was Ready before. When the cluster answers but the Node does
// not get there within the bound, the old kubelet is put back
// (hotswap.Undo) and the result says rolled-back, with what the Node
// lacked.

// DefaultClusterCheck bounds the cluster check when the join section sets
// no timeout and --health-timeout is shorter: a kubelet's start, its
// first status and two Lease renewals (every 10 s) fit in it.
const DefaultClusterCheck = time.Minute

// clusterPoll is how often the check reads the Node.
const clusterPoll = 500 * time.Millisecond

// Results of a cluster check.
const (
	// ClusterConfirmed: the Node reports the new kubelet.
	ClusterConfirmed = "confirmed"
	// ClusterRolledBack: it did not in time; the old kubelet is back.
	ClusterRolledBack = "rolled-back"
	// ClusterUnread: the Node could not be read; the new kubelet stays.
	ClusterUnread = "unread"
	// ClusterSkipped: the Node was not registered before the swap.
	ClusterSkipped = "skipped"
)

// ClusterCheck is what the cluster said of a kubelet swap.
type ClusterCheck struct {
	// Result is confirmed, rolled-back, unread or skipped.
	Result string `json:"result"`
	// Server is the API server asked.
	Server string `json:"server"`
	// Node is the Node as last read.
	Node cluster.NodeState `json:"node"`
	// Reason says why it was not confirmed.
	Reason string `json:"reason,omitempty"`
}

// joinNode is what the check needs from a connection: the node's host
// name when the join section names no Node, and the undo of the swap.
type joinNode interface {
	hotswap.Undoer
	InspectJoin(ctx context.Context, req ops.JoinInspectRequest) (ops.JoinInspectResponse, error)
}

// clusterCheck checks one node's kubelet swap.
type clusterCheck struct {
	cluster *cluster.Cluster
	join    *v1alpha1.JoinSpec
	// kubelet is the kubelet provisioner's name; version what the Node
	// must report ("" when the provisioner sets none).
	kubelet string
	version string
	timeout time.Duration
	// name and before are the Node, read before the swap (before.Name
	// empty when it was not read).
	name   string
	before cluster.NodeState
}

// newClusterCheck returns the check of spec's kubelet swap, nil when the
// node has no join section or provs do not include its kubelet.
func newClusterCheck(spec *v1alpha1.Node, provs []target.Binary, health time.Duration) (*clusterCheck, error) {
	js := spec.Spec.Kubernetes.Join
	if js == nil {
		return nil, nil
	}
	kubelet := v1alpha1.JoinKubelet(&spec.Spec.Kubernetes)
	if kubelet == nil || !selectedName(provs, kubelet.Name) {
		return nil, nil
	}
	c, err := cluster.Connect(js.Kubeconfig, js.Context)
	if err != nil {
		return nil, fmt.Errorf("the cluster check of the kubelet swap (spec.kubernetes.join): %w; nothing was changed", err)
	}
	chk := &clusterCheck{cluster: c, join: js, kubelet: kubelet.Name, timeout: ClusterCheckTimeout(js, health)}
	if v := kubelet.Version; v != "" {
		chk.version = "v" + strings.TrimPrefix(v, "v")
	}
	return chk, nil
}

func selectedName(provs []target.Binary, name string) bool {
	for _, b := range provs {
		if b.Name == name {
			return true
		}
	}
	return false
}

// ClusterCheckTimeout bounds the cluster check: the join section's
// timeout when set, else the longer of the health timeout and
// DefaultClusterCheck.
func ClusterCheckTimeout(js *v1alpha1.JoinSpec, health time.Duration) time.Duration {
	if js != nil && js.Timeout != nil && js.Timeout.Duration > 0 {
		return js.Timeout.Duration
	}
	if health <= 0 {
		health = hotswap.DefaultHealthTimeout
	}
	return max(health, DefaultClusterCheck)
}

// readBefore reads the Node before any service stops; c.name, when set,
// is the Node's name an earlier run read. An error leaves every service
// running: without the cluster nothing could confirm the swap.
func (c *clusterCheck) readBefore(ctx context.Context, n joinNode) error {
	if c.name == "" {
		c.name = c.join.NodeName
	}
	if c.name == "" {
		ins, err := n.InspectJoin(ctx, ops.JoinInspectRequest{})
		if err != nil {
			return fmt.Errorf("read the node's host name for the cluster check: %w", err)
		}
		c.name = strings.ToLower(ins.Hostname)
	}
	st, err := c.cluster.Node(ctx, c.name)
	if err != nil {
		return fmt.Errorf("the cluster check cannot read Node %s: %w (to swap without it, leave the kubelet out: --only)", c.name, err)
	}
	c.before = st
	return nil
}

// after runs the check once the run is over, when it updated the
// kubelet, and rolls the kubelet back when the cluster does not confirm
// it. It returns nil when there was nothing to check.
func (c *clusterCheck) after(ctx context.Context, n joinNode, report *hotswap.Report, opts hotswap.Options, step, warn func(string)) *ClusterCheck {
	if report == nil || c.before.Name == "" || !updated(report, c.kubelet) {
		return nil
	}
	out := &ClusterCheck{Server: c.cluster.Server, Node: c.before}
	if !c.before.Registered {
		out.Result = ClusterSkipped
		out.Reason = fmt.Sprintf("Node %s was not registered in the cluster at %s before the swap (run swdt join): the cluster cannot confirm the kubelet", c.name, c.cluster.Server)
		warn(out.Reason)
		return out
	}
	step(fmt.Sprintf("waiting for Node %s to confirm the new kubelet (up to %s)", c.name, c.timeout))
	wctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	baseline, err := c.cluster.Node(wctx, c.name)
	if err == nil {
		out.Node, err = c.cluster.WaitNode(wctx, c.name, Confirmation(c.version, c.before, baseline), clusterPoll)
	}
	var unmet *cluster.UnmetError
	switch decide(err, ctx.Err()) {
	case ClusterInterrupted:
		out.Result = ClusterUnread
		out.Reason = fmt.Sprintf("interrupted while waiting for Node %s to confirm the new kubelet; it stays: swdt status shows the Node", c.name)
		markFailed(report, c.kubelet, out.Reason)
	case ClusterConfirmed:
		out.Result = ClusterConfirmed
		step(fmt.Sprintf("Node %s confirmed kubelet %s (%s)", c.name, out.Node.KubeletVersion, readiness(out.Node)))
	case ClusterRolledBack:
		errors.As(err, &unmet)
		out.Result = ClusterRolledBack
		out.Reason = fmt.Sprintf("the cluster did not confirm the new kubelet within %s: %s", c.timeout, unmet.Error())
		hotswap.Undo(ctx, n, report, c.kubelet, out.Reason, opts)
	default:
		out.Result = ClusterUnread
		out.Reason = fmt.Sprintf("the cluster check could not read Node %s: %v; the new kubelet stays: check the control plane, then run swdt kubernetes --force to check again", c.name, err)
		markFailed(report, c.kubelet, out.Reason)
	}
	return out
}

// decide is what the wait's outcome means: confirmed (no error),
// interrupted (the run's context ended), rolled back (the cluster
// answered, the Node did not get there), or unread (the cluster could not
// be read: nothing proves the kubelet wrong).
func decide(err, interrupted error) string {
	var unmet *cluster.UnmetError
	switch {
	case err == nil:
		return ClusterConfirmed
	case interrupted != nil:
		return ClusterInterrupted
	case errors.As(err, &unmet):
		return ClusterRolledBack
	}
	return ClusterUnread
}

// ClusterInterrupted is decide's word for a wait the run's end cut short;
// the check's result is then unread.
const ClusterInterrupted = "interrupted"

// Confirmation is what the Node must show after a kubelet swap: the new
// build's version (when known), a Lease renewed after the renewal seen
// right after the swap (baseline), and Ready when it was Ready before.
func Confirmation(version string, before, baseline cluster.NodeState) cluster.Want {
	want := cluster.Want{KubeletVersion: version, Ready: before.Ready == corev1.ConditionTrue, RenewedAfter: baseline.LeaseRenewed}
	if want.RenewedAfter.IsZero() {
		// No Lease yet: any renewal is the new kubelet's.
		want.RenewedAfter = time.Unix(0, 0)
	}
	return want
}

// readiness says how Ready a Node is, for a step.
func readiness(st cluster.NodeState) string {
	if st.Ready == corev1.ConditionTrue {
		return "Ready"
	}
	if st.ReadyReason != "" {
		return "NotReady as before: " + st.ReadyReason
	}
	return "NotReady as before"
}

// updated reports whether the run updated the provisioner name.
func updated(report *hotswap.Report, name string) bool {
	for _, res := range report.Results {
		if res.Name == name && res.Action == hotswap.ActionUpdated {
			return true
		}
	}
	return false
}

// markFailed fails the provisioner name's result with why.
func markFailed(report *hotswap.Report, name, why string) {
	for i := range report.Results {
		if report.Results[i].Name == name {
			report.Results[i].Action, report.Results[i].Error = hotswap.ActionFailed, why
		}
	}
}
