package provision

import (
	"context"
	"fmt"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hashcache"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/target"
)

// session is one node of a run, for as long as the run lasts (every
// rebuild of --watch): its config, the provisioners selected for it, and
// what the run keeps of it: the connection (dialled ahead, or when its
// turn comes), its hash cache, what the last swap learned of its
// services and, with --watch, the indexes of what it holds, built in the
// background. close ends all of it and waits for it: nothing a session
// starts outlives the run.
type session struct {
	spec  *v1alpha1.Node
	provs []target.Binary

	// ctx ends when the session closes: what the session starts in the
	// background (the dial ahead, the indexing) runs on it.
	ctx     context.Context
	stop    context.CancelFunc
	connect fleet.Connector
	obs     Observer

	conn *node.Node
	// dialing is the connection dialAhead started, until connection
	// takes it.
	dialing chan dialed
	// hashes is the node's hash cache once read (hashesRead), nil when
	// there is no cache directory.
	hashes     *hashcache.File
	hashesRead bool
	// knowledge is what the last swap of this run learned of the node's
	// services; indexes, with --watch, keeps the indexes of what the
	// node holds between runs (nil otherwise).
	knowledge *hotswap.Knowledge
	indexes   *hotswap.Indexes
	// nodeName is the Node's name the cluster check read last (the
	// node's host name when the join section names none): a rebuild
	// under --watch does not ask the node again.
	nodeName string
}

// dialed is the outcome of a connection started ahead.
type dialed struct {
	conn *node.Node
	err  error
}

// open starts the session on ctx (the run's): it ends at the latest when
// ctx does.
func (s *session) open(ctx context.Context, connect fleet.Connector, obs Observer, watch bool) {
	s.ctx, s.stop = context.WithCancel(ctx)
	s.connect, s.obs = connect, obs
	if watch {
		s.indexes = hotswap.NewIndexes()
	}
}

// warn reports msg about the node.
func (s *session) warn(msg string) { s.obs.Warn("node " + s.spec.Name + ": " + msg) }

// dialAhead starts connecting to the node, when it is reached on its
// hostname (a VM reached at the address its hypervisor reports is
// connected to when its turn comes).
func (s *session) dialAhead() {
	h := s.spec.Spec.Credentials.Hostname
	if h == "" {
		return
	}
	ch := make(chan dialed, 1)
	s.dialing = ch
	s.obs.Step(s.spec.Name, "connecting to "+h)
	go func() {
		conn, err := s.connect(s.ctx, s.spec, s.warn)
		ch <- dialed{conn, err}
	}()
}

// connection returns the node's connection: the one kept from an
// earlier run, the one dialAhead started, or a new one.
func (s *session) connection(ctx context.Context) (*node.Node, error) {
	if s.conn != nil {
		return s.conn, nil
	}
	if ch := s.dialing; ch != nil {
		s.dialing = nil
		d := <-ch
		if d.err != nil {
			return nil, d.err
		}
		s.conn = d.conn
		return s.conn, nil
	}
	if h := s.spec.Spec.Credentials.Hostname; h != "" {
		s.obs.Step(s.spec.Name, "connecting to "+h)
	} else {
		s.obs.Step(s.spec.Name, "connecting to VM "+s.spec.Spec.VM.Name+" at the address its hypervisor reports")
	}
	conn, err := s.connect(ctx, s.spec, s.warn)
	if err != nil {
		return nil, err
	}
	s.conn = conn
	return conn, nil
}

// hashCache returns the node's hash cache in cacheDir, read once per run
// (nil when there is no cache directory).
func (s *session) hashCache(cacheDir string) *hashcache.File {
	if !s.hashesRead {
		s.hashes, s.hashesRead = hashcache.ForNode(cacheDir, s.spec), true
	}
	return s.hashes
}

// saveHashes records in the hash cache what the run learned of the node
// (the link's round trip, its services) and saves it.
func (s *session) saveHashes() {
	if s.hashes == nil {
		return
	}
	if s.conn != nil {
		if rtt, ok := s.conn.LinkRTT(); ok {
			s.hashes.RememberRTT(rtt)
		}
	}
	if last := s.knowledge.Last(); last != nil {
		s.hashes.RememberInspect(*last)
	}
	if err := s.hashes.Save(); err != nil {
		s.warn(fmt.Sprintf("%v (the next run hashes every binary on the node again)", err))
	}
}

// swapOptions are the hot-swap options of a swap on the node: the run's
// (o), with its flags, the hash cache and what is known of the node.
func (s *session) swapOptions(o Options) hotswap.Options {
	opts := o.Swap
	opts.Force, opts.DryRun, opts.Command = o.Force, o.DryRun, "swdt kubernetes"
	if hashes := s.hashCache(o.CacheDir); hashes != nil {
		opts.Hashes = hashes
		// Nothing is made ahead for a link files go as they are over:
		// the one kept from the last run (--watch), or the last one's.
		if s.conn != nil {
			opts.Transfer.ExpectedRTT, _ = s.conn.LinkRTT()
		} else {
			opts.Transfer.ExpectedRTT, _ = hashes.RTT()
		}
	}
	// What the last run (of this process with --watch, else the last one
	// recorded) learned of the node's services: a rebuild that is all
	// small patches goes in one op, which the node refuses when the
	// services changed since.
	if s.knowledge == nil {
		var last *ops.ProvisionInspectResponse
		if s.hashes != nil {
			last = s.hashes.LastInspect()
		}
		s.knowledge = hotswap.NewKnowledge(last)
	}
	opts.Transfer.Indexes, opts.Knowledge = s.indexes, s.knowledge
	return opts
}

// readBeforeSwap is the cluster's reading of the Node before a kubelet
// swap (check, nil: none), which only reads: a rebuild may still go in
// one op. Nil when there is no check.
func (s *session) readBeforeSwap(check *clusterCheck) func(context.Context) error {
	if check == nil {
		return nil
	}
	return func(ctx context.Context) error {
		check.name = s.nodeName
		err := check.readBefore(ctx, s.conn)
		s.nodeName = check.name
		return err
	}
}

// beforeSwap is the hook that runs after staging, and after
// readBeforeSwap, before the first service stops: the snapshot (nil:
// none), whose name goes to out. Nil when there is nothing to do.
func (s *session) beforeSwap(snapshot func(context.Context, *v1alpha1.Node, []string) (string, error),
	provs []target.Binary, out *NodeReport) func(context.Context) error {
	if snapshot == nil {
		return nil
	}
	return func(ctx context.Context) (err error) {
		names := make([]string, len(provs))
		for i, b := range provs {
			names[i] = b.Name
		}
		out.Snapshot, err = snapshot(ctx, s.spec, names)
		return err
	}
}

// keep indexes, while --watch waits for the next rebuild, what the node
// holds now of the items a swap left updated or unchanged.
func (s *session) keep(opts hotswap.Options, items []hotswap.Item, report *hotswap.Report) {
	if s.indexes == nil || report == nil {
		return
	}
	for _, res := range report.Results {
		if res.Action != hotswap.ActionUpdated && res.Action != hotswap.ActionUnchanged {
			continue
		}
		for _, it := range items {
			if it.Name == res.Name && it.Source != nil {
				s.indexes.Keep(s.ctx, opts.Transfer.Store, it.Destination, it.Source.SHA256)
			}
		}
	}
}

// close ends the session: the dial started ahead and not used, the
// connection, the indexes; it returns once all of them have ended.
func (s *session) close() {
	if s.stop != nil {
		s.stop()
	}
	if s.dialing != nil {
		// Started ahead and not used (a source failed).
		if d := <-s.dialing; d.err == nil {
			_ = d.conn.Close()
		}
		s.dialing = nil
	}
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.indexes.Close()
}
