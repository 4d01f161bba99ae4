package join

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/ops"
)

// `swdt join --reset` undoes a join on the node first, then in the
// cluster. The node side needs nothing from the cluster: after `kind
// delete cluster` (which also removes the kubeconfig's context), with the
// API server down or refusing the kubeconfig's credentials, the node is
// still reset, and what could not be deleted in the cluster is reported
// (LeftInCluster) and fails the run. The Node is deleted only in the
// cluster the node's kubelet.conf names; swdt's tokens for the node
// (bootstrap tokens, kube-proxy's Secret) in the kubeconfig's.

// Leftover is something `swdt join --reset` could not delete in a
// cluster.
type Leftover struct {
	// Object names it: "Node win-01", "swdt's bootstrap tokens for
	// win-01", "kube-proxy's token Secret kube-system/swdt-kube-proxy-win-01".
	Object string `json:"object"`
	// Server is the API server of the cluster it is in ("" when the
	// kubeconfig names none).
	Server string `json:"server,omitempty"`
	// Reason says why it was not deleted.
	Reason string `json:"reason"`
}

func (l Leftover) String() string {
	if l.Server == "" {
		return l.Object + ": " + l.Reason
	}
	return fmt.Sprintf("%s (at %s): %s", l.Object, l.Server, l.Reason)
}

func (j *joiner) reset(ctx context.Context, connect Connect) (*Report, error) {
	js := j.spec.Spec.Kubernetes.Join
	p := newPrepared(&j.spec.Spec.Kubernetes)
	// Reading the kubeconfig contacts nothing; a missing file or context
	// is reported once the node is reset.
	c, connErr := cluster.Connect(js.Kubeconfig, js.Context)
	j.step("connecting to " + j.spec.Spec.Credentials.Hostname)
	n, closeN, err := connect(ctx, j.spec, func(msg string) { j.opts.Observer.Warn("node " + j.spec.Name + ": " + msg) })
	if err != nil {
		return nil, err
	}
	defer closeN()
	ins, err := n.InspectJoin(ctx, ops.JoinInspectRequest{Containerd: p.containerd != nil, CNI: p.installsCNI()})
	if err != nil {
		return nil, err
	}
	for _, msg := range ins.Ignored {
		j.opts.Observer.Warn("node " + j.spec.Name + ": " + msg)
	}
	name := nodeName(js, ins.Hostname)
	joined := ""
	if ins.Kubeconfig != "" {
		if joined, err = cluster.ServerOf([]byte(ins.Kubeconfig)); err != nil {
			j.opts.Observer.Warn(fmt.Sprintf("node %s: its %s cannot be read (%v): the reset removes it, but cannot tell which cluster holds a Node %s of this machine", j.spec.Name, ops.JoinKubeconfig, err, name))
		}
	}
	rep := &Report{NodeName: name, Server: joined, Result: ResultUnchanged}
	if c != nil {
		rep.Server = c.Server
	}
	j.step("stopping and deleting the services and files of the join")
	res, err := n.ResetJoin(ctx, p.resetRequest())
	if err != nil {
		return nil, fmt.Errorf("reset the node (the cluster was not changed): %w", err)
	}
	for _, svc := range res.Deleted {
		rep.Removed = append(rep.Removed, "service "+svc)
	}
	rep.Removed = append(rep.Removed, res.Removed...)
	rep.Ended, rep.InUse = res.Ended, res.InUse
	if connErr != nil {
		rep.LeftInCluster = unreachable(name, joined, "", fmt.Sprintf("not deleted: %v", connErr))
	} else {
		j.resetCluster(ctx, c, name, joined, rep)
	}
	if len(rep.Removed) > 0 {
		rep.Result = ResultRemoved
	}
	rep.Error = resetError(rep)
	return rep, nil
}

// resetCluster deletes what a join left in the cluster c: the Node (when
// the node was joined to c: joined, its kubelet.conf's server, is c's),
// kube-proxy's token Secret and swdt's bootstrap tokens for the Node
// name. What it cannot delete goes to rep.LeftInCluster.
func (j *joiner) resetCluster(ctx context.Context, c *cluster.Cluster, name, joined string, rep *Report) {
	var left []Leftover
	j.step("checking the control plane at " + c.Server)
	st, err := c.Node(ctx, name)
	// The node's kubelet.conf names this cluster by the kubeconfig's
	// server or by the node's address of it (endpoint.go).
	ours := joinedHere(ctx, c, j.spec.Spec.Kubernetes.Join.APIServerEndpoint, joined, err == nil)
	if joined != "" && !ours {
		left = append(left, Leftover{Object: "Node " + name, Server: joined,
			Reason: fmt.Sprintf("not deleted: the node was joined to that cluster, not to the kubeconfig's (%s); delete it there (kubectl delete node %s with that cluster's kubeconfig)", c.Server, name)})
	}
	if err != nil {
		// Unreachable, or refusing the credentials: nothing in it can be
		// deleted.
		if !ours {
			joined = ""
		}
		rep.LeftInCluster = append(left, unreachable(name, joined, c.Server, fmt.Sprintf("not deleted: %v", err))...)
		return
	}
	if st.Registered && ours {
		j.step("deleting Node " + name)
		if err := c.DeleteNode(ctx, name); err != nil {
			left = append(left, Leftover{Object: "Node " + name, Server: c.Server, Reason: err.Error()})
		} else {
			rep.Removed = append(rep.Removed, "Node "+name)
		}
	}
	if deleted, err := c.DeleteKubeProxyToken(ctx, name); err != nil {
		left = append(left, Leftover{Object: kubeProxyToken(name), Server: c.Server, Reason: err.Error()})
	} else if deleted {
		rep.Removed = append(rep.Removed, "kube-proxy's token")
	}
	if n, err := c.DeleteBootstrapTokens(ctx, "swdt join "+name); err != nil {
		left = append(left, Leftover{Object: bootstrapTokens(name), Server: c.Server, Reason: err.Error()})
	} else if n > 0 {
		rep.Removed = append(rep.Removed, fmt.Sprintf("%d bootstrap token(s)", n))
	}
	rep.LeftInCluster = left
	if st, err := c.Node(ctx, name); err == nil {
		rep.Node = st
	}
}

// unreachable is what a reset leaves in a cluster it cannot reach (or
// use) at server ("" for a kubeconfig that names none) for the Node
// name: the Node when the node was joined there (joined, "" when not or
// unknown), and swdt's tokens for it, none of which can be checked.
func unreachable(name, joined, server, reason string) []Leftover {
	var out []Leftover
	if joined != "" {
		out = append(out, Leftover{Object: "Node " + name, Server: joined, Reason: reason})
	}
	return append(out,
		Leftover{Object: kubeProxyToken(name) + ", if any", Server: server, Reason: reason},
		Leftover{Object: bootstrapTokens(name) + ", if any", Server: server, Reason: reason})
}

func kubeProxyToken(name string) string {
	return "kube-proxy's token Secret kube-system/" + cluster.KubeProxySecret(name)
}

func bootstrapTokens(name string) string { return "swdt's bootstrap tokens for " + name }

// resetError says what a reset could not do ("" when it did everything):
// the files a process still runs, and what it left in the cluster.
func resetError(rep *Report) string {
	var parts []string
	for _, p := range rep.InUse {
		parts = append(parts, fmt.Sprintf("kept %s: process %d (%s) still runs it (%s); end it (Stop-Process -Id %d) and run swdt join --reset again", p.Path, p.PID, p.Name, p.Error, p.PID))
	}
	if len(rep.LeftInCluster) > 0 {
		parts = append(parts, "the node was reset, but this was left in the cluster: "+leftText(rep.LeftInCluster)+
			". Run swdt join --reset again once the cluster answers, or ignore it if the cluster is gone for good")
	}
	return strings.Join(parts, "; ")
}

// leftText lists leftovers, each run of them with the same reason and
// server said once: "A, B (at S): reason".
func leftText(left []Leftover) string {
	var out []string
	for i := 0; i < len(left); {
		objects := []string{left[i].Object}
		k := i + 1
		for ; k < len(left) && left[k].Reason == left[i].Reason && left[k].Server == left[i].Server; k++ {
			objects = append(objects, left[k].Object)
		}
		out = append(out, Leftover{Object: strings.Join(objects, ", "), Server: left[i].Server, Reason: left[i].Reason}.String())
		i = k
	}
	return strings.Join(out, "; ")
}

// resetRequest is what --reset removes from the node: the services of
// kube-proxy, the kubelet and containerd (in that order, each with its
// binary), and the files of the others.
func (p *prepared) resetRequest() ops.JoinResetRequest {
	var req ops.JoinResetRequest
	for _, pr := range []*v1alpha1.ProvisionerSpec{p.kubeProxy, p.kubelet, p.containerd} {
		if pr != nil {
			req.Services = append(req.Services, ops.JoinService{Name: serviceOf(pr), Binary: pr.Destination})
		}
	}
	for _, pr := range append(slices.Clone(p.helpers), p.files...) {
		req.Files = append(req.Files, pr.Destination)
	}
	if p.logRunner != nil {
		req.Files = append(req.Files, p.logRunner.Destination)
	}
	return req
}
