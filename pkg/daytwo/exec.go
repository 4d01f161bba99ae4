package daytwo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/fleet"
)

// ExecOptions are how Exec runs the program and where its output goes.
type ExecOptions struct {
	// Timeout stops the program after this long; it must be positive.
	Timeout time.Duration
	// Stdout and Stderr receive the program's output as it writes it,
	// byte for byte.
	Stdout, Stderr io.Writer
	// Warn receives what the user must see about the connection, naming
	// the node.
	Warn func(msg string)
}

// Exec runs command (a program and its arguments, never through a shell)
// on the node spec and returns its exit status, 0 to 255. A program that
// could not be started, ran longer than opts.Timeout, exited with a status
// swdt cannot pass on (0xC0000005...) or was cut short by ctx is an error
// naming the node.
func Exec(ctx context.Context, spec *v1alpha1.Node, connect fleet.Connector, command []string, opts ExecOptions) (int, error) {
	n, err := connect(ctx, spec, func(msg string) { opts.Warn("node " + spec.Name + ": " + msg) })
	if err != nil {
		return 0, err
	}
	defer n.Close()
	// The agent stops the program at timeout; the rest is for the agent's
	// delivery on first contact and for the answer to come back.
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout+time.Minute)
	defer cancel()
	res, err := n.Exec(ctx, command, opts.Timeout, opts.Stdout, opts.Stderr)
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		return 0, fmt.Errorf("node %s: interrupted: swdt stopped waiting for %s; the node ends it when the session closes", spec.Name, command[0])
	case err != nil:
		return 0, fmt.Errorf("node %s: %w", spec.Name, err)
	case res.TimedOut:
		return 0, fmt.Errorf("node %s: %s ran longer than --timeout %s and was stopped", spec.Name, command[0], opts.Timeout)
	case res.ExitCode < 0 || res.ExitCode > 255:
		// An exit status such as 0xC0000005 does not fit in ours.
		return 0, fmt.Errorf("node %s: %s exited with status %d (0x%08X)", spec.Name, command[0], res.ExitCode, uint32(res.ExitCode))
	}
	return res.ExitCode, nil
}
