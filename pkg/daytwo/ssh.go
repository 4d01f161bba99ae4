package daytwo

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/node"
)

// Shell runs an interactive session with a terminal on the node spec (its
// login shell, or opts.Command through it) over the node's own connection
// settings, and returns the remote exit status, 0 to 255. A status that
// does not fit (0xC000013A after Ctrl-C on Windows...), a lost
// connection or the end of ctx is an error naming the node. warn receives
// what the user must see about the connection, naming the node.
func Shell(ctx context.Context, spec *v1alpha1.Node, connect fleet.Connector, opts node.ShellOptions, warn func(msg string)) (int, error) {
	n, err := connect(ctx, spec, func(msg string) { warn("node " + spec.Name + ": " + msg) })
	if err != nil {
		return 0, fmt.Errorf("node %s: %w", spec.Name, err)
	}
	defer n.Close()
	status, err := n.Shell(ctx, opts)
	what := "the shell"
	if opts.Command != "" {
		what = opts.Command
	}
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		return 0, fmt.Errorf("node %s: interrupted: swdt closed the session of %s", spec.Name, what)
	case err != nil:
		return 0, fmt.Errorf("node %s: %w", spec.Name, err)
	case status < 0 || status > 255:
		return 0, fmt.Errorf("node %s: %s exited with status %d (0x%08X)", spec.Name, what, status, uint32(status))
	}
	return status, nil
}
