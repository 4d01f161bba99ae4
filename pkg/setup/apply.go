package setup

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
)

// Apply is swdt setup: it brings every node to its spec.setup in
// parallel. Every node's key files are read before any node is contacted:
// one that cannot be read is a usage error and nothing is done. warn
// receives what the user must see about a connection.
func Apply(ctx context.Context, nodes []v1alpha1.Node, connect fleet.Connector, opts Options, warn func(msg string)) ([]fleet.Result[*Report], error) {
	desired := make(map[string]Desired, len(nodes))
	var problems []error
	for _, n := range nodes {
		d, err := DesiredFrom(n.Spec.Setup)
		if err != nil {
			problems = append(problems, fmt.Errorf("node %s: %w", n.Name, err))
			continue
		}
		desired[n.Name] = d
	}
	if len(problems) > 0 {
		return nil, exitcode.WithCode(exitcode.Usage, errors.Join(problems...))
	}
	return fleet.Run(ctx, nodes, 0, func(ctx context.Context, spec *v1alpha1.Node) (*Report, error) {
		n, err := connect(ctx, spec, func(msg string) { warn("node " + spec.Name + ": " + msg) })
		if err != nil {
			return nil, err
		}
		defer n.Close()
		return Run(ctx, spec.Name, n, desired[spec.Name], opts)
	}), nil
}

// Failures names the failed steps of one node's setup, as one error.
func Failures(r *Report) []error {
	var failed []string
	for _, s := range r.Steps {
		if s.Result == Failed {
			failed = append(failed, s.Name)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return []error{fmt.Errorf("setup failed for %d step(s): %s (see DETAIL above)", len(failed), strings.Join(failed, ", "))}
}
