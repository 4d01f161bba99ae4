package wins

import (
	"context"
	"fmt"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hashcache"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/node"
)

// Verb is what Run does on each node.
type Verb int

// Verbs of swdt wins.
const (
	// VerbDeploy deploys and verifies (nodes without spec.wins are
	// skipped).
	VerbDeploy Verb = iota
	// VerbVerify only verifies.
	VerbVerify
	// VerbUninstall removes wins.
	VerbUninstall
)

// Observer shows a run. Implementations must be safe for concurrent use.
type Observer interface {
	// Step reports what one node is doing.
	Step(node, msg string)
	// Warn reports something the user must see.
	Warn(msg string)
}

// RunOptions tune Run.
type RunOptions struct {
	Verb Verb
	// Deploy tunes VerbDeploy; its Swap.Observer is set by Run. Deep is
	// also VerbVerify's.
	Deploy Options
	// Observer shows the run.
	Observer Observer
	// NodeFile names the node file in errors.
	NodeFile string
}

// Run does opts.Verb on every node in parallel and returns each node's
// report. Its error is a usage error: no node has spec.wins to deploy.
func Run(ctx context.Context, nodes []v1alpha1.Node, connect fleet.Connector, opts RunOptions) ([]fleet.Result[*Report], error) {
	if opts.Verb == VerbDeploy {
		var with []v1alpha1.Node
		for _, n := range nodes {
			if n.Spec.Wins == nil {
				opts.Observer.Warn("node " + n.Name + " has no spec.wins: skipped")
				continue
			}
			with = append(with, n)
		}
		if len(with) == 0 {
			return nil, exitcode.WithCode(exitcode.Usage,
				fmt.Errorf("no node in %s has spec.wins: add a wins section (see the wins section of 'swdt config init')", opts.NodeFile))
		}
		nodes = with
	}
	return fleet.Run(ctx, nodes, 0, func(ctx context.Context, spec *v1alpha1.Node) (*Report, error) {
		n, err := connect(ctx, spec, func(msg string) { opts.Observer.Warn("node " + spec.Name + ": " + msg) })
		if err != nil {
			return nil, err
		}
		defer n.Close()
		switch opts.Verb {
		case VerbVerify:
			return Verify(ctx, n, spec.Spec.Wins, opts.Deploy.Deep)
		case VerbUninstall:
			return Uninstall(ctx, n, spec.Spec.Wins)
		}
		return deployNode(ctx, n, spec, opts)
	}), nil
}

func deployNode(ctx context.Context, n *node.Node, spec *v1alpha1.Node, opts RunOptions) (*Report, error) {
	d := opts.Deploy
	d.Swap.Observer = &nodeObserver{o: opts.Observer, node: spec.Name}
	if hashes := hashcache.ForNode("", spec); hashes != nil {
		d.Swap.Hashes = hashes
		defer func() { _ = hashes.Save() }() // without it the next run re-hashes wins.exe
	}
	return Deploy(ctx, n, spec.Spec.Wins, d)
}

// Failures lists a failed deploy and the failed checks of one node.
func Failures(r *Report) []error {
	var errs []error
	if r.Deploy != nil && r.Deploy.Error != "" {
		errs = append(errs, fmt.Errorf("deploy %s: %s", r.Deploy.Action, r.Deploy.Error))
	}
	for _, c := range r.Checks {
		if !c.OK {
			errs = append(errs, fmt.Errorf("check %s: %s", c.Name, c.Detail))
		}
	}
	return errs
}

// nodeObserver is one node's hot-swap observer.
type nodeObserver struct {
	o    Observer
	node string
}

func (w *nodeObserver) Planned(p *hotswap.Plan) {
	for _, s := range p.Steps {
		w.o.Step(w.node, fmt.Sprintf("plan: wins.exe: %s (%s)", s.Action, s.Reason))
	}
}

func (w *nodeObserver) Step(msg string) { w.o.Step(w.node, msg) }

func (w *nodeObserver) Upload(it hotswap.Item) func(sent int64) {
	w.o.Step(w.node, fmt.Sprintf("staging %s (%d bytes)", it.Staged(), it.Source.Size))
	return func(int64) {}
}
