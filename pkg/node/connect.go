package node

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/remote"
)

// ConnectOptions are the caller's hooks for a connection.
type ConnectOptions struct {
	// Logger receives debug detail; nil discards.
	Logger *slog.Logger
	// Warn receives warnings the user must see (e.g. an insecure host key
	// policy).
	Warn func(msg string)
	// Passphrase prompts for an encrypted key's passphrase; nil means no
	// prompt (SWDT_KEY_PASSPHRASE is still honoured).
	Passphrase func(keyFile string) ([]byte, error)
	// Timeouts bound the node's ops; the zero value takes the defaults.
	Timeouts Timeouts
	// Waiting is Node.Waiting.
	Waiting func(msg string)
	// Transfer is Node.Transfer.
	Transfer func(label string, total int64) (update func(sent int64), end func())
	// NodeFile is the node file spec comes from, named in errors about its
	// credentials (optional).
	NodeFile string
}

// Connect dials the node described by spec over SSH, on its hostname (a
// node with spec.vm and no hostname is dialled by vm.ConnectNode on the
// address its hypervisor reports). Errors do not name the node: callers
// (pkg/fleet) add it.
func Connect(ctx context.Context, spec v1alpha1.Node, opts ConnectOptions) (*Node, error) {
	n, err := Dial(ctx, spec, spec.Spec.Credentials.Hostname, opts)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return n, nil
}

// Dial connects to the node of spec at host (host[:port], or a Host alias
// of the ssh config) in place of its credentials' hostname: the one
// connection setup of every node, for callers that learn the address
// elsewhere (vm.ConnectNode, from the hypervisor). A server that does not
// answer is a *remote.DialError.
func Dial(ctx context.Context, spec v1alpha1.Node, host string, opts ConnectOptions) (*Node, error) {
	creds := spec.Spec.Credentials
	creds.Hostname = host
	cfg, err := RemoteConfig(creds)
	if err != nil {
		return nil, err
	}
	cfg.Logger, cfg.Warn, cfg.Passphrase, cfg.NodeFile = opts.Logger, opts.Warn, opts.Passphrase, opts.NodeFile
	client, err := remote.Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	n := New(spec.Name, client, opts.Logger)
	n.Timeouts, n.Waiting, n.Transfer = opts.Timeouts, opts.Waiting, opts.Transfer
	return n, nil
}

// DialHost connects over SSH to a machine that is not a node of the file:
// a hypervisor host (pkg/vm), given as [user@]host[:port] or an
// ~/.ssh/config alias. Its keys and user come from there (or ssh-agent);
// its host key is checked as creds says for the node (knownHostsFile,
// hostKeyPolicy). Reaching it is bounded by dialTimeout and ctx. The Node
// is named host and logs to opts.Logger.
func DialHost(ctx context.Context, host string, creds v1alpha1.CredentialsSpec, dialTimeout time.Duration, opts ConnectOptions) (*Node, error) {
	cfg := remote.Config{
		Host:           host,
		KnownHostsFile: creds.KnownHostsFile,
		HostKeyPolicy:  string(creds.HostKeyPolicy),
		DialTimeout:    dialTimeout,
		Logger:         opts.Logger,
		Warn:           opts.Warn,
		Passphrase:     opts.Passphrase,
	}
	if i := strings.LastIndex(host, "@"); i >= 0 {
		cfg.User, cfg.Host = host[:i], host[i+1:]
	}
	client, err := remote.Dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return New(host, client, opts.Logger), nil
}
