package app

import (
	"context"
	"slices"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/rollout"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/vm"
)

// connect dials a node with the run's logger, warnings routed to warn,
// on a terminal a prompt for an encrypted key's passphrase, and the
// agent's upload on first contact shown as a transfer.
func (e *env) connect(ctx context.Context, spec *v1alpha1.Node, warn func(msg string)) (*node.Node, error) {
	return e.dial(ctx, spec, warn, true)
}

// connectQuiet is connect for the verbs whose stderr is a program's own
// (exec, ssh -- CMD): nothing of swdt's shows there but errors.
func (e *env) connectQuiet(ctx context.Context, spec *v1alpha1.Node, warn func(msg string)) (*node.Node, error) {
	return e.dial(ctx, spec, warn, false)
}

func (e *env) dial(ctx context.Context, spec *v1alpha1.Node, warn func(msg string), transfers bool) (*node.Node, error) {
	var transfer func(label string, total int64) (func(int64), func())
	if transfers && e.ui.Format() != ui.FormatJSON {
		transfer = func(label string, total int64) (func(int64), func()) {
			t := e.sharedProgress().Transfer(label, total)
			return t.Update, t.End
		}
	}
	if e.kube != nil {
		n, err := rollout.KubeConnector(*e.kube, e.ui.Logger()).Connect(ctx, spec.Name, warn)
		if err != nil {
			return nil, err
		}
		// The agent goes up with the first op, through the API as over SSH.
		n.Transfer = transfer
		return n, nil
	}
	e.promptOnce.Do(func() { e.passphrase = e.ui.PassphrasePrompt(e.streams.In) })
	opts := node.ConnectOptions{Logger: e.ui.Logger(), Warn: warn, Passphrase: e.passphrase, NodeFile: e.configPath,
		Waiting: func(msg string) { e.ui.Step(spec.Name, "%s", msg) }, Transfer: transfer}
	return vm.ConnectNode(ctx, *spec, opts, e.openVM)
}

// sharedProgress is the run's one ui.Progress: the workflow's transfers
// and the agent's upload on first contact share its bars.
func (e *env) sharedProgress() *ui.Progress {
	e.progressOnce.Do(func() { e.progress = e.ui.NewProgress() })
	return e.progress
}

// loadConfig loads the -c file, keeps the nodes --node names (all without
// it) and shows their warnings. files are the local files the command may
// read: one of them that does not exist or cannot be read is a warning, as
// the command may not need it (swdt status without a local build), and one
// it needs is reported where it is read. Its errors carry exitcode.Usage.
func (e *env) loadConfig(files config.FileKind) (*config.Result, error) {
	return e.loadConfigWith(config.Options{Files: files})
}

// loadConfigWith is loadConfig with the loader's options.
func (e *env) loadConfigWith(opts config.Options) (*config.Result, error) {
	res, err := config.LoadWith(e.configPath, opts)
	if err != nil {
		return nil, err
	}
	if len(e.nodes) > 0 {
		var kept []v1alpha1.Node
		for _, name := range e.nodes {
			i := slices.IndexFunc(res.Nodes, func(n v1alpha1.Node) bool { return n.Name == name })
			if i < 0 {
				return nil, unknownNode(res, name)
			}
			if !slices.ContainsFunc(kept, func(n v1alpha1.Node) bool { return n.Name == name }) {
				kept = append(kept, res.Nodes[i])
			}
		}
		res.Nodes = kept
	}
	e.showWarnings(res)
	return res, nil
}

// showWarnings keeps the warnings of res about its nodes (or about the
// whole file) and shows them.
func (e *env) showWarnings(res *config.Result) {
	var kept []config.Problem
	for _, w := range res.Warnings {
		if w.Node == "" || slices.ContainsFunc(res.Nodes, func(n v1alpha1.Node) bool { return n.Name == w.Node }) {
			kept = append(kept, w)
			e.ui.Warn("%s", w)
		}
	}
	res.Warnings = kept
}
