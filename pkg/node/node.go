// Package node is the typed Go API of one Windows node: facts, services,
// files, registry, firewall, Chocolatey and pipes, each backed by an op of
// swdt-agent (pkg/ops) or by SFTP. It delivers the agent to the node on
// first use (agent.go) and runs one op per command (call.go).
//
// It never prints and never decides: workflows (pkg/setup, pkg/provision,
// pkg/wins) decide what to do; this package only does it and reports back.
package node

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"sync"

	"sigs.k8s.io/swdt/pkg/ops"
)

// Conn is what a node needs from its transport; what else a transport
// may do is in capabilities.go. *remote.Client implements it; all paths
// are Windows paths.
type Conn interface {
	// Exec runs one command line on the node, writes stdin to it and
	// closes it (EOF), and returns the remote exit status.
	Exec(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error)
	// Stat describes a file; a missing one matches fs.ErrNotExist.
	Stat(ctx context.Context, remotePath string) (fs.FileInfo, error)
	// ReadDir lists a directory.
	ReadDir(ctx context.Context, remotePath string) ([]fs.FileInfo, error)
	// Remove deletes a file.
	Remove(ctx context.Context, remotePath string) error
	// Upload streams size bytes from src to remotePath through a staged
	// name, reporting the bytes sent so far to progress (may be nil).
	Upload(ctx context.Context, src io.ReaderAt, size int64, remotePath string, progress func(sent int64)) error
	// UploadStream sends what open returns, up to EOF, to remotePath
	// (itself: for uploads the node verifies before use) and returns the
	// bytes sent; open is called again when the upload has to restart.
	UploadStream(ctx context.Context, open func() (io.ReadCloser, error), remotePath string, progress func(sent int64)) (int64, error)
	// MkdirAll creates a directory and its parents.
	MkdirAll(ctx context.Context, remotePath string) error
	// Download copies a file's content to w.
	Download(ctx context.Context, remotePath string, w io.Writer) error
	// Addr is the address dialled (host:port): connections with one
	// address reach one machine.
	Addr() string
	// Close ends the connection.
	Close() error
}

// Node is one connected Windows node.
type Node struct {
	// Name is metadata.name of the node, used in messages.
	Name string
	// Timeouts bound each op when the caller's context has no deadline;
	// the zero value takes the defaults.
	Timeouts Timeouts
	// Waiting, when set, is told every HeartbeatInterval that an op is
	// still running: "waiting for service-swap (45s of 2m0s)".
	Waiting func(msg string)
	// Transfer, when set, shows the node's own uploads (the agent's, on
	// first contact) as the workflows show theirs: it starts showing one
	// of total bytes and returns its update and end.
	Transfer func(label string, total int64) (update func(sent int64), end func())
	conn     Conn
	// extras are what conn can do beyond Conn, asked once.
	extras extras
	logger *slog.Logger

	// agentMu guards agentPath, the agent's path on the node once it is
	// known to be there ("" until then), agentFresh, the path this process
	// uploaded the agent to and has not yet heard from (agentSilent), and
	// agentCache.
	agentMu    sync.Mutex
	agentPath  string
	agentFresh string
	agentCache AgentCache

	// opsMu guards running: how many ops of each name run now, so that
	// PrepareOp does not start ahead an op whose run has already gone.
	opsMu   sync.Mutex
	running map[string]int
}

// AgentCache remembers, on this machine and between processes, the agent
// file a connection to the node verified by content: keyed by its path,
// its size, SHA-256 and last-write time as SFTP reported it (ModTicks,
// here in Unix nanoseconds). *hashcache.File is one.
type AgentCache interface {
	Known(path string) *ops.FileInfo
	Remember(path string, f ops.FileInfo)
}

// RememberAgent makes the node trust an agent file an earlier process
// verified by content when SFTP reports the same size and last-write time
// for it (DESIGN.md §3.4), and record the one it verifies in c.
func (n *Node) RememberAgent(c AgentCache) {
	n.agentMu.Lock()
	defer n.agentMu.Unlock()
	n.agentCache = c
}

// New wraps a connection. logger receives op names and parameters at debug
// level; nil discards.
func New(name string, conn Conn, logger *slog.Logger) *Node {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Node{Name: name, conn: conn, extras: extrasOf(conn), logger: logger.With("node", name)}
}

// Close ends the node's connection.
func (n *Node) Close() error { return n.conn.Close() }

// Facts reports the node's OS, hostname and whether swdt runs as an
// administrator.
func (n *Node) Facts(ctx context.Context) (ops.NodeFactsResponse, error) {
	return call(ctx, n, ops.NodeFacts, ops.NodeFactsRequest{}, n.Timeouts.query())
}

// Upload streams a file to remotePath through a staged name, creating the
// directory first.
func (n *Node) Upload(ctx context.Context, src io.ReaderAt, size int64, remotePath string, progress func(sent int64)) error {
	return n.conn.Upload(ctx, src, size, remotePath, progress)
}

// MkdirAll creates a directory on the node and its parents.
func (n *Node) MkdirAll(ctx context.Context, remotePath string) error {
	return n.conn.MkdirAll(ctx, remotePath)
}
