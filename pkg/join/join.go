// Package join is the `swdt join` workflow: it makes a Windows node a
// worker of the developer's own cluster, and `--reset` undoes it.
//
// A join checks the control plane first (reachable, credentials that may
// create bootstrap tokens, the kubelet version allowed by the skew policy)
// and the node (not joined to another cluster, its name not taken by
// another machine) before it changes anything. Then it creates a bootstrap
// token as `kubeadm token create` does, writes the files a kubeadm join
// writes on Windows (the cluster CA, the bootstrap kubeconfig and a
// KubeletConfiguration) through the agent, installs the kubelet through
// the hot-swap and registers its service with --windows-service, waits for
// the Node to register and renew its Lease, and deletes the token: the
// kubelet has its own client certificate by then (TLS bootstrap).
//
// It reaches the node through Node and the cluster through pkg/cluster;
// it never prints and never sees SSH.
package join

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/source"
	"sigs.k8s.io/swdt/pkg/target"
)

// Node is what the workflow needs from a node; *node.Node implements it.
type Node interface {
	hotswap.Node
	InspectJoin(ctx context.Context) (ops.JoinInspectResponse, error)
	WriteJoinFiles(ctx context.Context, files map[ops.JoinFile]string) (ops.JoinWriteResponse, error)
	ResetJoin(ctx context.Context, req ops.JoinResetRequest) (ops.JoinResetResponse, error)
	RegisterService(ctx context.Context, req ops.ServiceRegisterRequest) (ops.ServiceRegisterResponse, error)
}

// Observer shows a run. Implementations must be safe for concurrent use.
type Observer interface {
	// Step reports what one node is doing.
	Step(node, msg string)
	// Warn reports something the user must see.
	Warn(msg string)
}

// Options tune a run.
type Options struct {
	// Reset undoes a join instead.
	Reset bool
	// Resolver resolves the kubelet's source.
	Resolver *source.Resolver
	// Swap tunes the kubelet's hot-swap; Observer and Command are set here.
	Swap hotswap.Options
	// Observer shows the run.
	Observer Observer
	// PollEvery is how often the Node is read while waiting (default 1s).
	PollEvery time.Duration
	// TokenTTL is how long the bootstrap token is valid (default 1h; it is
	// deleted once the node has joined).
	TokenTTL time.Duration
}

// Result words of a report.
const (
	ResultChanged   = "changed"
	ResultUnchanged = "unchanged"
	ResultFailed    = "failed"
	ResultRemoved   = "removed"
)

// DefaultTimeout bounds the wait for the Node when the node file sets none.
const DefaultTimeout = 3 * time.Minute

// Report is the outcome on one node.
type Report struct {
	// NodeName is the Node object's name.
	NodeName string `json:"nodeName"`
	// Result is changed, unchanged or failed (removed for --reset).
	Result string `json:"result"`
	// Server is the API server the node joined (or left).
	Server string `json:"server"`
	// Kubelet is the kubelet binary's hot-swap result.
	Kubelet *hotswap.Result `json:"kubelet,omitempty"`
	// FilesChanged lists the join files written.
	FilesChanged []ops.JoinFile `json:"filesChanged,omitempty"`
	// Node is what the cluster says of the Node afterwards.
	Node cluster.NodeState `json:"node"`
	// Note explains a Node that is not Ready.
	Note string `json:"note,omitempty"`
	// Removed lists what --reset removed from the node.
	Removed []string `json:"removed,omitempty"`
	// Error says what failed.
	Error string `json:"error,omitempty"`
}

// Connect opens one node; fleet.Connector's shape with the join Node.
type Connect func(ctx context.Context, spec *v1alpha1.Node, warn func(string)) (Node, func(), error)

// Run joins (or resets) every node in parallel.
func Run(ctx context.Context, nodes []v1alpha1.Node, connect Connect, opts Options) ([]fleet.Result[*Report], error) {
	var with []v1alpha1.Node
	for _, n := range nodes {
		if n.Spec.Kubernetes.Join == nil {
			opts.Observer.Warn("node " + n.Name + " has no spec.kubernetes.join: skipped")
			continue
		}
		with = append(with, n)
	}
	if len(with) == 0 {
		return nil, fmt.Errorf("no node has spec.kubernetes.join: add one naming the cluster's kubeconfig (see docs/join.md)")
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = time.Second
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	return fleet.Run(ctx, with, 0, func(ctx context.Context, spec *v1alpha1.Node) (*Report, error) {
		j := &joiner{spec: spec, opts: opts, step: func(msg string) { opts.Observer.Step(spec.Name, msg) }}
		if opts.Reset {
			return j.reset(ctx, connect)
		}
		return j.join(ctx, connect)
	}), nil
}

// Failures lists what failed on one node.
func Failures(r *Report) []error {
	if r != nil && r.Error != "" {
		return []error{fmt.Errorf("%s", r.Error)}
	}
	return nil
}

type joiner struct {
	spec *v1alpha1.Node
	opts Options
	step func(string)
}

// prepared is what a join checked before it changes anything.
type prepared struct {
	cluster *cluster.Cluster
	kubelet *v1alpha1.ProvisionerSpec
	version string // the kubelet version the node must report ("" unknown)
	source  *source.File
	n       Node
	closeN  func()
	name    string
	joined  bool // the node's kubelet.conf names this cluster
	before  cluster.NodeState
}

func (j *joiner) prepare(ctx context.Context, connect Connect, resolve bool) (*prepared, error) {
	js := j.spec.Spec.Kubernetes.Join
	p := &prepared{kubelet: v1alpha1.JoinKubelet(&j.spec.Spec.Kubernetes)}
	c, err := cluster.Connect(js.Kubeconfig, js.Context)
	if err != nil {
		return nil, err
	}
	p.cluster = c
	j.step("checking the control plane at " + c.Server)
	server, err := c.Check(ctx)
	if err != nil {
		return nil, err
	}
	if !j.opts.Reset {
		want := server
		if v := p.kubelet.Version; v != "" {
			if want, err = version.ParseGeneric(v); err != nil {
				return nil, fmt.Errorf("provisioner %s: version %q is not a Kubernetes version such as v1.37.2: %w", p.kubelet.Name, v, err)
			}
			p.version = "v" + strings.TrimPrefix(v, "v")
		}
		if err := cluster.CheckSkew(want, server); err != nil {
			return nil, fmt.Errorf("provisioner %s: %w", p.kubelet.Name, err)
		}
	}
	if resolve {
		f, err := j.opts.Resolver.Resolve(ctx, p.kubelet.SourceURL, p.kubelet.SHA256, nil)
		if err != nil {
			return nil, fmt.Errorf("provisioner %s: %w; nothing was changed", p.kubelet.Name, err)
		}
		p.source = f
	}
	j.step("connecting to " + j.spec.Spec.Credentials.Hostname)
	n, closeN, err := connect(ctx, j.spec, func(msg string) { j.opts.Observer.Warn("node " + j.spec.Name + ": " + msg) })
	if err != nil {
		return nil, err
	}
	p.n, p.closeN = n, closeN
	ins, err := n.InspectJoin(ctx)
	if err != nil {
		closeN()
		return nil, err
	}
	p.name = js.NodeName
	if p.name == "" {
		p.name = strings.ToLower(ins.Hostname)
	}
	if ins.Kubeconfig != "" {
		other, err := cluster.ServerOf([]byte(ins.Kubeconfig))
		switch {
		case err != nil:
			closeN()
			return nil, fmt.Errorf("the node's %s cannot be read (%v): remove it, or run swdt join --reset", ops.JoinKubeconfig, err)
		case other != c.Server && !j.opts.Reset:
			closeN()
			return nil, fmt.Errorf("the node is already joined to the cluster at %s, not %s: run swdt join --reset with that cluster's kubeconfig first; nothing was changed", other, c.Server)
		}
		p.joined = other == c.Server
	}
	if p.before, err = c.Node(ctx, p.name); err != nil {
		closeN()
		return nil, err
	}
	if p.before.Registered && !p.joined && !j.opts.Reset {
		closeN()
		return nil, fmt.Errorf("the cluster already has a Node named %s, and this machine has no kubelet credentials for it: another machine has that name. Set spec.kubernetes.join.nodeName, or delete the stale Node (kubectl delete node %s); nothing was changed", p.name, p.name)
	}
	return p, nil
}

func (j *joiner) join(ctx context.Context, connect Connect) (*Report, error) {
	p, err := j.prepare(ctx, connect, true)
	if err != nil {
		return nil, err
	}
	defer p.closeN()
	js := j.spec.Spec.Kubernetes.Join
	rep := &Report{NodeName: p.name, Server: p.cluster.Server, Result: ResultUnchanged}
	description := "swdt join " + p.name
	files := map[ops.JoinFile]string{ops.JoinFileCA: string(p.cluster.CAData)}
	kc, err := KubeletConfig(js)
	if err != nil {
		return nil, err
	}
	files[ops.JoinFileKubeletConfig] = string(kc)
	if !p.joined {
		j.step("creating a bootstrap token")
		token, err := p.cluster.CreateBootstrapToken(ctx, description, j.opts.TokenTTL)
		if err != nil {
			return nil, err
		}
		boot, err := p.cluster.BootstrapKubeconfig(token)
		if err != nil {
			return nil, err
		}
		files[ops.JoinFileBootstrapKubeconfig] = string(boot)
	}
	written, err := p.n.WriteJoinFiles(ctx, files)
	if err != nil {
		return nil, fmt.Errorf("write the kubelet's files: %w", err)
	}
	rep.FilesChanged = written.Changed
	started := time.Now()
	res, err := j.installKubelet(ctx, p, slices.Contains(written.Changed, ops.JoinFileKubeletConfig))
	if res != nil {
		rep.Kubelet = res
	}
	if err != nil {
		rep.Result, rep.Error = ResultFailed, err.Error()
		return rep, nil
	}
	if res.Action != hotswap.ActionUnchanged || len(written.Changed) > 0 || !p.before.Registered {
		rep.Result = ResultChanged
	}
	want := cluster.Want{KubeletVersion: p.version}
	if rep.Result == ResultChanged {
		want.RenewedAfter = started
	}
	timeout := DefaultTimeout
	if js.Timeout != nil {
		timeout = js.Timeout.Duration
	}
	j.step(fmt.Sprintf("waiting for Node %s to register (up to %s)", p.name, timeout))
	wctx, cancel := context.WithTimeout(ctx, timeout)
	rep.Node, err = p.cluster.WaitNode(wctx, p.name, want, j.opts.PollEvery)
	cancel()
	if err != nil {
		rep.Result = ResultFailed
		rep.Error = fmt.Sprintf("%v within %s: see swdt logs %s kubelet (the bootstrap token stays valid for %s)", err, timeout, j.spec.Name, j.opts.TokenTTL)
		return rep, nil
	}
	if _, err := p.cluster.DeleteBootstrapTokens(ctx, description); err != nil {
		j.opts.Observer.Warn(fmt.Sprintf("node %s: joined, but its bootstrap token was not deleted (it expires on its own): %v", j.spec.Name, err))
	}
	rep.Note = readyNote(rep.Node)
	return rep, nil
}

// installKubelet puts the kubelet binary in place through the hot-swap and
// registers its service when missing; restart restarts an unchanged
// kubelet (its configuration changed).
func (j *joiner) installKubelet(ctx context.Context, p *prepared, restart bool) (*hotswap.Result, error) {
	b := target.Provisioner(*p.kubelet)
	reg := Registration(j.spec.Spec.Kubernetes.Join, p.kubelet, p.name)
	it := hotswap.Item{Name: b.Name, Service: b.Service, Destination: b.Destination, Source: p.source,
		Force: b.Overwrite, HealthChecks: b.HealthChecks, StartChecks: b.HealthChecks, Restart: restart,
		Register: func(ctx context.Context) error {
			_, err := p.n.RegisterService(ctx, reg)
			return err
		}}
	opts := j.opts.Swap
	opts.Command = "swdt join"
	opts.Observer = stepObserver{step: j.step}
	report, err := hotswap.Run(ctx, p.n, []hotswap.Item{it}, opts)
	if err != nil {
		return nil, err
	}
	if len(report.Results) != 1 {
		return nil, fmt.Errorf("kubelet install: %d results for one binary", len(report.Results))
	}
	res := report.Results[0]
	if res.Failed() {
		return &res, fmt.Errorf("kubelet %s: %s", res.Action, res.Error)
	}
	return &res, nil
}

func (j *joiner) reset(ctx context.Context, connect Connect) (*Report, error) {
	p, err := j.prepare(ctx, connect, false)
	if err != nil {
		return nil, err
	}
	defer p.closeN()
	rep := &Report{NodeName: p.name, Server: p.cluster.Server, Result: ResultUnchanged}
	svc := p.kubelet.Service
	if svc == "" {
		svc = p.kubelet.Name
	}
	j.step("stopping and deleting service " + svc)
	res, err := p.n.ResetJoin(ctx, ops.JoinResetRequest{Service: svc, Binary: p.kubelet.Destination})
	if err != nil {
		return nil, err
	}
	rep.Removed = res.Removed
	if res.ServiceDeleted {
		rep.Removed = append([]string{"service " + svc}, rep.Removed...)
	}
	if p.before.Registered && p.joined {
		j.step("deleting Node " + p.name)
		if err := p.cluster.DeleteNode(ctx, p.name); err != nil {
			return nil, err
		}
		rep.Removed = append(rep.Removed, "Node "+p.name)
	}
	n, err := p.cluster.DeleteBootstrapTokens(ctx, "swdt join "+p.name)
	if err != nil {
		return nil, err
	}
	if n > 0 {
		rep.Removed = append(rep.Removed, fmt.Sprintf("%d bootstrap token(s)", n))
	}
	if len(rep.Removed) > 0 {
		rep.Result = ResultRemoved
	}
	rep.Node, err = p.cluster.Node(ctx, p.name)
	return rep, err
}

// readyNote explains a Node that registered but is not Ready.
func readyNote(st cluster.NodeState) string {
	switch {
	case st.Ready == corev1.ConditionTrue:
		return ""
	case strings.Contains(st.ReadyMessage, "NetworkPluginNotReady") || strings.Contains(st.ReadyMessage, "cni"):
		return "NotReady only because no network plugin (CNI) runs on the node yet: deploy Flannel or Calico for Windows (sig-windows-tools' HostProcess DaemonSets), see docs/join.md"
	}
	return fmt.Sprintf("NotReady: %s: %s", st.ReadyReason, st.ReadyMessage)
}

// stepObserver shows the kubelet's hot-swap as steps.
type stepObserver struct{ step func(string) }

func (o stepObserver) Planned(p *hotswap.Plan) {
	for _, s := range p.Steps {
		o.step(fmt.Sprintf("plan: %s: %s (%s)", s.Item.Name, s.Action, s.Reason))
	}
}

func (o stepObserver) Step(msg string) { o.step(msg) }

func (o stepObserver) Upload(it hotswap.Item) func(sent int64) {
	o.step(fmt.Sprintf("staging %s (%d bytes)", it.Staged(), it.Source.Size))
	return func(int64) {}
}
