// Package rollout is the swdt rollout workflow: it swaps a node file's
// provisioners on every Node of a cluster that the file's
// spec.kubernetes.rollout selects, at most maxUnavailable at a time,
// optionally draining each Node first, and gates each on the cluster (the
// new kubeletVersion, a Lease renewal, Ready as before). A Node that
// fails is rolled back and the rollout stops there. Its state lives in
// the cluster (a ConfigMap in swdt-system), so that a rollout cut
// short resumes where it stopped (docs/rollout.md).
//
// It reaches each Node through a Connector, whatever the transport, and
// swaps through pkg/hotswap; it never prints and never imports another
// workflow.
package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/source"
	"sigs.k8s.io/swdt/pkg/target"
)

// Connector reaches the Node name of the cluster as a node of the node
// API, whatever the transport (SSH to its address, or the Kubernetes API
// itself); the caller closes it. warn receives what the user must see
// about the connection.
type Connector interface {
	Connect(ctx context.Context, name string, warn func(msg string)) (*node.Node, error)
}

// ConnectFunc is a Connector that is a function.
type ConnectFunc func(ctx context.Context, name string, warn func(msg string)) (*node.Node, error)

// Connect calls f.
func (f ConnectFunc) Connect(ctx context.Context, name string, warn func(msg string)) (*node.Node, error) {
	return f(ctx, name, warn)
}

// Observer is told what the rollout does; it must be safe for concurrent
// use (maxUnavailable Nodes at once).
type Observer interface {
	// Step reports what one Node is doing.
	Step(node, msg string)
	// Warn reports something the user must see.
	Warn(msg string)
}

// Options tune a rollout.
type Options struct {
	// Cluster is the cluster (the rollout section's kubeconfig).
	Cluster *cluster.Cluster
	// Connect reaches each Node.
	Connect Connector
	// Access are rights the transport needs beyond the rollout's own,
	// checked with them before anything changes.
	Access []Right
	// Resolver resolves the provisioners' sources.
	Resolver *source.Resolver
	// Swap tunes each Node's hot-swap (timeouts, Abort); Command,
	// DryRun and Observer are set here.
	Swap hotswap.Options
	// DryRun selects the Nodes and reports what would be done, changing
	// nothing.
	DryRun bool
	// Observer shows the rollout; nil discards it.
	Observer Observer
	// PollEvery is how often the cluster is read while waiting (default
	// 500ms).
	PollEvery time.Duration
}

// Results of a Node in a report: the words of every swdt report
// (changed, unchanged, would-change, rolled-back, failed) and the
// rollout's own.
const (
	// ResultChanged: swapped and confirmed by the cluster.
	ResultChanged = "changed"
	// ResultUnchanged: the Node had the build already.
	ResultUnchanged = "unchanged"
	// ResultDoneBefore: an earlier run of this rollout did it (resume).
	ResultDoneBefore = "done-before"
	// ResultRolledBack: the build failed there; the old one runs again.
	ResultRolledBack = "rolled-back"
	// ResultFailed: it failed and could not be put back as it was.
	ResultFailed = "failed"
	// ResultInterrupted: the run was cut short on this Node; a resumed
	// run does it again.
	ResultInterrupted = "interrupted"
	// ResultUntouched: the rollout stopped before this Node.
	ResultUntouched = "untouched"
	// ResultWouldChange: what --dry-run would swap.
	ResultWouldChange = "would-change"
)

// Report is the outcome of a rollout.
type Report struct {
	// Name is the rollout's (the node file's metadata.name).
	Name string `json:"name"`
	// Server is the API server.
	Server string `json:"server"`
	// Selector selects the Nodes, as kubectl takes it.
	Selector string `json:"selector"`
	// Provisioners are the provisioners rolled.
	Provisioners []string `json:"provisioners"`
	// MaxUnavailable is how many Nodes were swapped at once.
	MaxUnavailable int `json:"maxUnavailable"`
	// Resumed is true when the run continued an earlier one of the same
	// build.
	Resumed bool `json:"resumed"`
	// Stopped says why the rollout stopped before its end ("" when it
	// went through every Node).
	Stopped string `json:"stopped,omitempty"`
	// Nodes are the selected Nodes, by name.
	Nodes []NodeReport `json:"nodes"`
}

// NodeReport is one Node's part of a rollout.
type NodeReport struct {
	// Name is the Node's name.
	Name string `json:"name"`
	// Result is changed, unchanged, done-before, rolled-back, failed,
	// interrupted, untouched or would-change.
	Result string `json:"result"`
	// Kubelet is the kubeletVersion the Node reports now.
	Kubelet string `json:"kubelet,omitempty"`
	// Ready is the Node's Ready condition now.
	Ready corev1.ConditionStatus `json:"ready,omitempty"`
	// Evicted counts the pods its drain evicted.
	Evicted int `json:"evicted,omitempty"`
	// Provisioners are the swap's results.
	Provisioners []Provisioner `json:"provisioners,omitempty"`
	// Error says what failed.
	Error string `json:"error,omitempty"`
}

// Provisioner is one provisioner's result on a Node.
type Provisioner struct {
	// Name is the provisioner's; Action what the swap did with it
	// (updated, unchanged, rolled-back, failed); Error why it failed.
	Name   string         `json:"name"`
	Action hotswap.Action `json:"action"`
	Error  string         `json:"error,omitempty"`
}

// ErrStopped is what Run's error matches when a Node failed and the
// rollout stopped there (the report says where).
var ErrStopped = errors.New("the rollout stopped")

// Run rolls spec's provisioners over the Nodes its rollout section
// selects. The report is returned whenever Nodes were selected; the error
// says why the rollout did not finish (ErrStopped when a Node failed).
func Run(ctx context.Context, spec *v1alpha1.Node, opts Options) (*Report, error) {
	r, err := newRun(spec, opts)
	if err != nil {
		return nil, err
	}
	if err := checkAccess(ctx, opts.Cluster.Client(), r.drain != nil, opts.Access); err != nil {
		return nil, err
	}
	names, err := r.selectNodes(ctx)
	if err != nil {
		return nil, err
	}
	r.report.Nodes = make([]NodeReport, len(names))
	for i, name := range names {
		r.report.Nodes[i] = NodeReport{Name: name, Result: ResultUntouched}
	}
	r.report.MaxUnavailable, err = v1alpha1.MaxUnavailable(r.spec.MaxUnavailable, len(names))
	if err != nil {
		return nil, fmt.Errorf("spec.kubernetes.rollout.maxUnavailable: %w", err)
	}
	if len(names) == 0 {
		return r.report, fmt.Errorf("no Windows Node of %s matches the selector %s: check it with kubectl get nodes -l '%s'", opts.Cluster.Server, r.report.Selector, r.report.Selector)
	}
	if err := r.resolve(ctx); err != nil {
		return r.report, err
	}
	if err := r.loadState(ctx); err != nil {
		return r.report, err
	}
	r.roll(ctx)
	r.readNodes(ctx)
	if r.report.Stopped != "" {
		return r.report, fmt.Errorf("%w: %s", ErrStopped, r.report.Stopped)
	}
	return r.report, ctx.Err()
}

// run is one rollout.
type run struct {
	spec   *v1alpha1.RolloutSpec
	node   *v1alpha1.Node
	opts   Options
	provs  []target.Binary
	items  []hotswap.Item
	drain  *v1alpha1.DrainSpec
	gate   time.Duration
	sel    labels.Selector
	report *Report
	state  *store

	// mu guards report.Stopped and report.Nodes' entries while Nodes
	// roll at once.
	mu sync.Mutex
}

// DefaultGateTimeout bounds the cluster's check of a Node when the
// rollout section sets none.
const DefaultGateTimeout = time.Minute

func newRun(spec *v1alpha1.Node, opts Options) (*run, error) {
	rs := spec.Spec.Kubernetes.Rollout
	if rs == nil {
		return nil, fmt.Errorf("node file %s has no spec.kubernetes.rollout: add one that selects the Nodes to roll (docs/rollout.md)", spec.Name)
	}
	if opts.Observer == nil {
		opts.Observer = nopObserver{}
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = 500 * time.Millisecond
	}
	r := &run{spec: rs, node: spec, opts: opts, drain: rs.Drain, gate: DefaultGateTimeout,
		report: &Report{Name: spec.Name, Server: opts.Cluster.Server}}
	if rs.Timeout != nil {
		r.gate = rs.Timeout.Duration
	}
	for _, b := range target.Provisioners(spec) {
		if len(rs.Provisioners) == 0 || slices.ContainsFunc(rs.Provisioners, func(n string) bool { return strings.EqualFold(n, b.Name) }) {
			r.provs = append(r.provs, b)
			r.report.Provisioners = append(r.report.Provisioners, b.Name)
		}
	}
	sel, err := selector(rs.Selector)
	if err != nil {
		return nil, err
	}
	r.sel, r.report.Selector = sel, sel.String()
	return r, nil
}

// selector is the rollout's selector with kubernetes.io/os=windows.
func selector(ls *metav1.LabelSelector) (labels.Selector, error) {
	sel := labels.Everything()
	if ls != nil {
		var err error
		if sel, err = metav1.LabelSelectorAsSelector(ls); err != nil {
			return nil, fmt.Errorf("spec.kubernetes.rollout.selector: %w", err)
		}
	}
	windows, err := labels.NewRequirement(corev1.LabelOSStable, selection.Equals, []string{"windows"})
	if err != nil {
		return nil, err
	}
	return sel.Add(*windows), nil
}

// selectNodes lists the Nodes the selector picks, by name.
func (r *run) selectNodes(ctx context.Context) ([]string, error) {
	return r.opts.Cluster.NodeNames(ctx, r.report.Selector)
}

// resolve resolves every provisioner's source once, for every Node.
func (r *run) resolve(ctx context.Context) error {
	var errs []error
	r.items = r.items[:0]
	for _, b := range r.provs {
		f, err := r.opts.Resolver.ResolveBinary(ctx, b.Source(), nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("provisioner %s: %w", b.Name, err))
			continue
		}
		r.items = append(r.items, hotswap.Item{Name: b.Name, Service: b.Service, Helper: b.Helper, Destination: b.Destination,
			Source: f, Force: b.Overwrite, HealthChecks: b.HealthChecks, StartChecks: b.HealthChecks})
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("resolve the sources before any Node is touched: %w", err)
	}
	return nil
}

// roll swaps the pending Nodes, at most maxUnavailable at once, and stops
// starting Nodes once one failed or ctx ended.
func (r *run) roll(ctx context.Context) {
	slots := make(chan struct{}, r.report.MaxUnavailable)
	var wg sync.WaitGroup
	for i := range r.report.Nodes {
		name := r.report.Nodes[i].Name
		if r.state.done(name) {
			r.set(i, func(n *NodeReport) { n.Result = ResultDoneBefore })
			continue
		}
		if r.opts.DryRun {
			r.set(i, func(n *NodeReport) { n.Result = ResultWouldChange })
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil || r.stopped() {
			if ctx.Err() != nil {
				r.stop(fmt.Sprintf("interrupted before Node %s: run swdt rollout again to resume", name))
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			out := r.swapNode(ctx, name)
			r.set(i, func(n *NodeReport) { *n = out })
			switch out.Result {
			case ResultRolledBack, ResultFailed:
				r.stop(fmt.Sprintf("Node %s %s: %s", name, out.Result, out.Error))
			case ResultInterrupted:
				r.stop(fmt.Sprintf("interrupted on Node %s: run swdt rollout again to resume", name))
			}
		}()
	}
	wg.Wait()
}

func (r *run) set(i int, fn func(n *NodeReport)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(&r.report.Nodes[i])
}

func (r *run) stopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.report.Stopped != ""
}

// stop records the first reason the rollout stops.
func (r *run) stop(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.report.Stopped == "" {
		r.report.Stopped = why
	}
}

// readNodes fills in what each Node reports now.
func (r *run) readNodes(ctx context.Context) {
	// An interrupted run still says what each Node runs.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	for i := range r.report.Nodes {
		n, err := r.opts.Cluster.Client().CoreV1().Nodes().Get(ctx, r.report.Nodes[i].Name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		r.report.Nodes[i].Kubelet = n.Status.NodeInfo.KubeletVersion
		r.report.Nodes[i].Ready = corev1.ConditionUnknown
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				r.report.Nodes[i].Ready = c.Status
			}
		}
	}
}

type nopObserver struct{}

func (nopObserver) Step(string, string) {}
func (nopObserver) Warn(string)         {}
