package vm

import (
	"context"
	"fmt"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/node"
)

// OpenFunc opens the hypervisor of a node's spec.vm (Open, or a test's
// stand-in).
type OpenFunc func(ctx context.Context, spec *v1alpha1.Node) (Provider, error)

// ConnectNode dials the node described by spec. A node with spec.vm and no
// hostname is dialled on the address its hypervisor reports: ConnectNode
// opens the hypervisor with open (nil means Open) and tries SSH on each
// address, again and again until one answers or spec.vm.addressTimeout
// passes. The address goes through ~/.ssh/config like a hostname would, so
// a Host entry for it may set the port or the key. Any other node is
// dialled by node.Connect. Errors do not name the node: callers add it.
func ConnectNode(ctx context.Context, spec v1alpha1.Node, opts node.ConnectOptions, open OpenFunc) (*node.Node, error) {
	if spec.Spec.Credentials.Hostname != "" || spec.Spec.VM == nil {
		return node.Connect(ctx, spec, opts)
	}
	if open == nil {
		open = func(ctx context.Context, n *v1alpha1.Node) (Provider, error) {
			return Open(ctx, n, Options{Logger: opts.Logger, Warn: opts.Warn, Passphrase: opts.Passphrase})
		}
	}
	p, err := open(ctx, &spec)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	defer p.Close()
	var n *node.Node
	probe := func(ctx context.Context, ip string) (bool, error) {
		var err error
		n, err = node.Dial(ctx, spec, ip, opts)
		// Only an SSH server that does not answer (yet) is worth waiting
		// for; a refused key or a changed host key will not go away.
		return node.Unreachable(err), err
	}
	timeout := v1alpha1.DefaultVMAddressTimeout
	if t := spec.Spec.VM.AddressTimeout; t != nil {
		timeout = t.Duration
	}
	ip, err := WaitForAddress(ctx, p, timeout, probe)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if opts.Logger != nil {
		opts.Logger.Info("address from the hypervisor", "node", spec.Name, "vm", p.Describe(), "address", ip)
	}
	return n, nil
}
