package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/swdt/pkg/agentbin"
	"sigs.k8s.io/swdt/pkg/ops"
)

// DefaultAgentTimeout bounds the agent's delivery on first contact
// (looking for it, uploading a few MB, running it once) when the caller's
// context has no deadline.
const DefaultAgentTimeout = 5 * time.Minute

// confirmAgent records that the agent answered at path.
func (n *Node) confirmAgent(path string) {
	n.agentMu.Lock()
	defer n.agentMu.Unlock()
	if n.agentPath == "" {
		n.logger.Info("swdt-agent is on the node and verified, nothing sent", "path", path)
		n.agentPath = path
	}
}

// agent is the path the agent answered at, else "".
func (n *Node) agent() string {
	n.agentMu.Lock()
	defer n.agentMu.Unlock()
	return n.agentPath
}

// deliver makes sure the agent is on the node, within the caller's
// deadline or DefaultAgentTimeout, and returns its path and whether it
// arrived after since (uploaded now, or by another connection of this
// process to the same machine); a delivery cut off by the bound is a
// *TimeoutError.
func (n *Node) deliver(ctx context.Context, since time.Time) (string, bool, error) {
	bound := DefaultAgentTimeout
	if dl, ok := ctx.Deadline(); ok {
		bound = time.Until(dl)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	path, arrived, err := n.deliverInTurn(ctx, since)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "", false, &TimeoutError{Node: n.Name, Op: "deliver swdt-agent", After: bound, Err: err}
	}
	return path, arrived, err
}

// machineDeliveries are this process's deliveries of the agent to one
// machine. They take turns, since they would upload to the same path at
// once: several nodes share a machine when their VMs share a Hyper-V host.
type machineDeliveries struct {
	// turn has room for one: the delivery under way.
	turn chan struct{}
	// last is when a delivery last put the agent in place (read and
	// written only while holding turn).
	last time.Time
	// verified is the agent path this process verified by content on the
	// machine (guarded by mu: agentRan forgets it without the turn).
	mu       sync.Mutex
	verified string
}

// verifiedPath is the agent path this process verified on the machine.
func (m *machineDeliveries) verifiedPath() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.verified
}

// setVerified records (or with "" forgets) the path verified.
func (m *machineDeliveries) setVerified(path string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.verified = path
}

// deliveries maps a machine (machineKey) to its *machineDeliveries.
// Entries are never removed: a process reaches few machines.
var deliveries sync.Map

// machineKey names the machine the node's connection reaches: its address
// and, where the connection tells it (HostKeyer), its host key, so that a
// machine made again at an address a delivery verified (a VM created
// anew, a test's server on a reused port) is not taken for the first.
func (n *Node) machineKey() string {
	k := strings.ToLower(n.conn.Addr())
	if n.extras.host != nil {
		k += " " + n.extras.host.HostKey()
	}
	return k
}

// deliverInTurn is ensureAgent once no other delivery to the node's
// machine from this process is under way (the one that waited then finds
// the agent in place, verified). arrived is true when the agent was put
// in place after since, by this delivery or another.
func (n *Node) deliverInTurn(ctx context.Context, since time.Time) (path string, arrived bool, err error) {
	v, _ := deliveries.LoadOrStore(n.machineKey(), &machineDeliveries{turn: make(chan struct{}, 1)})
	m := v.(*machineDeliveries)
	select {
	case m.turn <- struct{}{}:
	case <-ctx.Done():
		return "", false, fmt.Errorf("wait for another delivery of swdt-agent to %s: %w", n.conn.Addr(), ctx.Err())
	}
	defer func() { <-m.turn }()
	if p := n.agent(); p != "" {
		// Verified by the delivery this one waited for (PrepareAgent).
		return p, m.last.After(since), nil
	}
	path, fresh, err := n.ensureAgent(ctx, m.verifiedPath())
	if err == nil {
		m.setVerified(path)
	}
	if fresh {
		m.last = time.Now()
	}
	return path, fresh || m.last.After(since), err
}

// armDir exists only on Windows for ARM64 (it holds the ARM32 system
// files): its presence picks the arm64 agent without running anything.
const armDir = `C:\Windows\SysArm32`

// ensureAgent makes sure the agent of the node's architecture is at its
// content-addressed path under ops.AgentDir, with exactly the embedded
// bytes, before anything runs it. ops.AgentDir is below C:\Program Files,
// where only Administrators and SYSTEM may write. A file found there is
// read back and hashed the first time this process uses it (verified
// names the path already checked): not trusted by its size, nor by its
// own word; one with other bytes is removed and the agent uploaded again.
// What this process uploads over SFTP is not read back (DESIGN.md §3.4):
// SSH's integrity check covers the bytes on their way, only a complete
// upload is recorded or run (a partial file, the upload cut short, is read
// back by the next delivery), and the agent's first run reports its file's
// size and time (agentRan); an upload through another transport is read
// back. fresh is true when it uploaded the agent.
func (n *Node) ensureAgent(ctx context.Context, verified string) (path string, fresh bool, err error) {
	if path, ok := n.recordedAgent(ctx); ok {
		return path, false, nil
	}
	look := n.lookForAgent(ctx)
	// Nothing of the delivery outlives it: a call in flight when the
	// delivery's context ends would cost the connection (remote's grace).
	defer look.settle()
	goarch := "amd64"
	if look.arm {
		goarch = "arm64"
	}
	// The digest and size only: the 7 MB binary is read for an upload.
	want, err := embeddedAgent(goarch)
	if err != nil {
		return "", false, err
	}
	path = ops.AgentPath(want.sum)
	fi, err := look.agent[goarch].fi, look.agent[goarch].err
	switch {
	case err == nil && strings.EqualFold(path, verified):
		n.confirmAgent(path)
		return path, false, nil
	case err == nil:
		ok, err := n.verifyFound(ctx, path, fi, want)
		if err != nil {
			return "", false, err
		}
		if ok {
			return path, false, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("look for swdt-agent at %s: %w", path, err)
	}
	if !look.dir {
		if err := look.mkdir(ctx, n.conn); err != nil {
			return "", false, n.notAdmin(fmt.Errorf("create %s for swdt-agent: %w", ops.AgentDir, err))
		}
	}
	a, err := agentbin.For(goarch)
	if err != nil {
		return "", false, err
	}
	var shown func(sent int64)
	end := func() {}
	size := int64(len(a.Binary))
	if n.Transfer != nil {
		shown, end = n.Transfer("node "+n.Name+": upload swdt-agent (first contact)", size)
	}
	var ahead sync.Once
	progress := func(sent int64) {
		if shown != nil {
			shown(sent)
		}
		if sent == size {
			// The first op's channel opens while the last bytes are
			// acknowledged and the file closed.
			ahead.Do(n.PrepareSession)
		}
	}
	var old sync.WaitGroup
	if look.dir {
		// Older versions go while the upload streams: no round trip of
		// their own.
		old.Go(func() { n.removeOldAgents(ctx, path) })
	}
	// Straight to its path, with no staged name: a partial file (the
	// upload cut short) has no record, so the next delivery reads it back
	// and replaces it.
	sent, err := n.conn.UploadStream(ctx, func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(a.Binary)), nil
	}, path, progress)
	if err == nil && sent != size {
		err = fmt.Errorf("sent %d of %d bytes", sent, size)
	}
	end()
	old.Wait()
	if err != nil {
		// Another swdt may have delivered it meanwhile (its op running
		// keeps the file from being replaced): verified like any file
		// found there.
		fi, serr := n.conn.Stat(ctx, path)
		if serr != nil {
			return "", false, fmt.Errorf("upload swdt-agent to %s: %w", path, err)
		}
		ok, verr := n.verifyFound(ctx, path, fi, want)
		if verr != nil {
			return "", false, verr
		}
		if !ok {
			return "", false, fmt.Errorf("upload swdt-agent to %s: %w", path, err)
		}
		return path, true, nil
	}
	if !n.extras.exact {
		// Another transport's upload (kubeconn's file script, through
		// PowerShell) is read back.
		sum, err := n.remoteSHA256(ctx, path)
		if err != nil {
			return "", false, fmt.Errorf("read back swdt-agent after uploading it to %s: %w", path, err)
		}
		if sum != a.SHA256 {
			_ = n.conn.Remove(ctx, path)
			return "", false, fmt.Errorf("swdt-agent uploaded to %s reads back with SHA-256 %s, not %s: the upload was corrupted and was removed; run again",
				path, sum, a.SHA256)
		}
	}
	n.agentUploaded(path, want)
	n.logger.Info("swdt-agent uploaded", "path", path, "bytes", len(a.Binary), "goarch", goarch)
	n.agentMu.Lock()
	n.agentPath, n.agentFresh = path, path
	n.agentMu.Unlock()
	return path, true, nil
}

// agentLook is what one round of looks on the node found: whether it is
// Windows for ARM64, each architecture's agent file, and whether
// ops.AgentDir exists.
type agentLook struct {
	arm   bool
	dir   bool
	agent map[string]statResult
	// made has the answer of the MKDIR of ops.AgentDir sent with the
	// looks, on SFTP, where a request in flight costs no round trip of its
	// own (nil: none was sent). Its answer matters only when the folder
	// was missing; where it was there, the MKDIR failed harmlessly.
	made chan error
}

// mkdir makes ops.AgentDir, found missing: the MKDIR sent with the looks,
// else one now.
func (l *agentLook) mkdir(ctx context.Context, conn Conn) error {
	if l.made != nil {
		err := <-l.made
		l.made = nil
		return err
	}
	return conn.MkdirAll(ctx, ops.AgentDir)
}

// settle waits for the MKDIR sent with the looks when nothing took its
// answer (the folder was there).
func (l *agentLook) settle() {
	if l.made != nil {
		<-l.made
		l.made = nil
	}
}

// statResult is one Stat's answer.
type statResult struct {
	fi  fs.FileInfo
	err error
}

// lookForAgent takes every look the delivery needs at once (armDir, the
// agent path of each embedded architecture, ops.AgentDir), so that they
// cost one round trip on a transport that answers requests in flight, and
// on SFTP sends the MKDIR of ops.AgentDir beside them (agentLook.made).
func (n *Node) lookForAgent(ctx context.Context) *agentLook {
	look := &agentLook{agent: map[string]statResult{}}
	if n.extras.uploads != nil {
		// A first contact finds the folder missing; the MKDIR is then
		// answered by the time the looks are.
		look.made = make(chan error, 1)
		go func() { look.made <- n.conn.MkdirAll(ctx, ops.AgentDir) }()
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		fi, err := n.conn.Stat(ctx, armDir)
		mu.Lock()
		look.arm = err == nil && fi.IsDir()
		mu.Unlock()
	})
	wg.Go(func() {
		fi, err := n.conn.Stat(ctx, ops.AgentDir)
		mu.Lock()
		look.dir = err == nil && fi.IsDir()
		mu.Unlock()
	})
	for _, goarch := range []string{"amd64", "arm64"} {
		sum, err := agentbin.Digest(goarch)
		if err != nil {
			// Not embedded: For says so if the node needs it.
			continue
		}
		wg.Go(func() {
			fi, err := n.conn.Stat(ctx, ops.AgentPath(sum))
			mu.Lock()
			look.agent[goarch] = statResult{fi, err}
			mu.Unlock()
		})
	}
	wg.Wait()
	return look
}

// agentID is an embedded agent's digest and size, known without reading
// its binary (agentbin.Digest, agentbin.Size).
type agentID struct {
	sum  string
	size int64
}

// embeddedAgent is the agentID of the agent embedded for goarch.
func embeddedAgent(goarch string) (agentID, error) {
	sum, err := agentbin.Digest(goarch)
	if err != nil {
		return agentID{}, err
	}
	size, err := agentbin.Size(goarch)
	if err != nil {
		return agentID{}, err
	}
	return agentID{sum: sum, size: size}, nil
}

// verifyFound reads back the file found at the agent's path and hashes
// it: ok when it is the agent want (then confirmed and recorded); a file
// with other bytes is removed (ok false, so that the caller uploads the
// agent).
func (n *Node) verifyFound(ctx context.Context, path string, fi fs.FileInfo, want agentID) (ok bool, err error) {
	sum, err := n.remoteSHA256(ctx, path)
	if err != nil {
		return false, n.notAdmin(fmt.Errorf("read back swdt-agent at %s to verify it: %w", path, err))
	}
	if sum == want.sum && fi.Size() == want.size {
		n.agentVerified(path, fi, sum)
		n.confirmAgent(path)
		return true, nil
	}
	n.logger.Warn("the file at the agent's path is not this swdt's agent: replacing it", "path", path, "sha256", sum)
	if err := n.conn.Remove(ctx, path); err != nil {
		return false, fmt.Errorf("%s holds a file that is not swdt-agent (SHA-256 %s) and it cannot be removed: %w; "+
			"remove it as an administrator and run again", path, sum, err)
	}
	return false, nil
}

// agentUploaded records in the agent cache the agent this process has just
// put at path, its time still to come (ModTicks 0): the agent's first run
// reports it, with its file's size (agentRan). Until then no process
// trusts the record.
func (n *Node) agentUploaded(path string, a agentID) {
	n.agentMu.Lock()
	c := n.agentCache
	n.agentMu.Unlock()
	if c != nil {
		c.Remember(path, ops.FileInfo{Path: path, Exists: true, Size: a.size, SHA256: a.sum})
	}
}

// NotAdminError is an SSH account that was denied access to
// ops.AgentDir, where only Administrators and SYSTEM may read and write:
// it is not an administrator, and swdt cannot deliver its agent.
type NotAdminError struct {
	// Node is the node's metadata.name.
	Node string
	// Err is the access denied.
	Err error
}

func (e *NotAdminError) Error() string {
	return fmt.Sprintf("the SSH account is not an administrator on node %s: %v; "+
		"swdt needs a member of Administrators: set spec.credentials.username to one", e.Node, e.Err)
}

// Unwrap returns the access denied.
func (e *NotAdminError) Unwrap() error { return e.Err }

// notAdmin turns an access denied in ops.AgentDir into a *NotAdminError.
func (n *Node) notAdmin(err error) error {
	if !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return &NotAdminError{Node: n.Name, Err: err}
}

// recordedAgent looks first for an agent the agent cache says an earlier
// process verified on the node (of either architecture: the cache is the
// node's), saving the look at armDir; ok when it is there with the size
// and time recorded.
func (n *Node) recordedAgent(ctx context.Context) (path string, ok bool) {
	n.agentMu.Lock()
	c := n.agentCache
	n.agentMu.Unlock()
	if c == nil {
		return "", false
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		// The digest and size only: the binary is not read.
		want, err := embeddedAgent(goarch)
		if err != nil {
			continue
		}
		path := ops.AgentPath(want.sum)
		if c.Known(path) == nil {
			continue
		}
		fi, err := n.quickStat(ctx, path)
		if err == nil && n.agentKnown(path, fi, want.sum, want.size) {
			n.logger.Debug("swdt-agent has the size and time it had when an earlier run read it back", "path", path)
			n.confirmAgent(path)
			return path, true
		}
	}
	return "", false
}

// quickStat is the transport's QuickStat where it has one (one round
// trip where Stat takes three, pkg/remote), else its Stat.
func (n *Node) quickStat(ctx context.Context, path string) (fs.FileInfo, error) {
	if n.extras.quick != nil {
		return n.extras.quick.QuickStat(ctx, path)
	}
	return n.conn.Stat(ctx, path)
}

// agentKnown reports whether the agent cache holds a record of the file
// at path, as fi describes it now, read back and hashed to sum by an
// earlier process: same size (the agent's) and same last-write time.
func (n *Node) agentKnown(path string, fi fs.FileInfo, sum string, size int64) bool {
	n.agentMu.Lock()
	c := n.agentCache
	n.agentMu.Unlock()
	if c == nil {
		return false
	}
	rec := c.Known(path)
	return rec != nil && rec.Exists && rec.SHA256 == sum && rec.Size == size && fi.Size() == size &&
		rec.ModTicks > 0 && rec.ModTicks/int64(time.Second) == fi.ModTime().Unix()
}

// agentRan checks what the agent at path reported of its own file's
// size and last-write time (full precision, ops.Envelope.ImageModTime)
// against the record. SFTP version 3, which agentKnown compares with,
// shows whole seconds only: the agent's first report after a verification
// makes the record precise (and after this process's upload, which has no
// time yet, gives it one). A later report that differs means the file
// changed within the second SFTP shows since it was verified. The record
// is then spoiled, so that the next delivery (in this process or another)
// reads the file back before it runs it, and the user is warned.
func (n *Node) agentRan(path string, imageModTime, imageSize int64) {
	n.agentMu.Lock()
	if strings.EqualFold(n.agentFresh, path) {
		n.agentFresh = ""
	}
	c := n.agentCache
	n.agentMu.Unlock()
	if c == nil || imageModTime <= 0 {
		return
	}
	rec := c.Known(path)
	if rec == nil || !rec.Exists || rec.ModTicks < 0 || rec.ModTicks == imageModTime {
		return
	}
	sec := int64(time.Second)
	if rec.ModTicks == 0 && (imageSize == 0 || imageSize == rec.Size) ||
		rec.ModTicks%sec == 0 && rec.ModTicks/sec == imageModTime/sec {
		rec.ModTicks = imageModTime
		c.Remember(path, *rec)
		return
	}
	n.logger.Warn("swdt-agent's file changed since it was put in place and verified: the next run reads it back again before it runs it",
		"path", path, "recorded", time.Unix(0, rec.ModTicks).UTC(), "now", time.Unix(0, imageModTime).UTC(), "size", imageSize)
	rec.ModTicks = -1
	c.Remember(path, *rec)
	n.forgetVerified()
}

// agentSilent is an op whose agent at path printed no result. When this
// process has just uploaded that file and not yet heard from it (fresh),
// the upload is no longer trusted: the next delivery, in this process or
// another, reads the file back (and replaces it if it is not the agent)
// before anything runs it again.
func (n *Node) agentSilent(path string) (fresh bool) {
	n.agentMu.Lock()
	fresh = strings.EqualFold(n.agentFresh, path)
	if fresh {
		n.agentFresh, n.agentPath = "", ""
	}
	c := n.agentCache
	n.agentMu.Unlock()
	if !fresh {
		return false
	}
	if c != nil {
		if rec := c.Known(path); rec != nil {
			rec.ModTicks = -1
			c.Remember(path, *rec)
		}
	}
	n.forgetVerified()
	return true
}

// forgetVerified drops this process's memo that the agent on the node's
// machine was verified.
func (n *Node) forgetVerified() {
	if v, ok := deliveries.Load(n.machineKey()); ok {
		v.(*machineDeliveries).setVerified("")
	}
}

// agentVerified records in the agent cache that the file at path, as fi
// describes it, was read back and hashed to sum.
func (n *Node) agentVerified(path string, fi fs.FileInfo, sum string) {
	n.agentMu.Lock()
	c := n.agentCache
	n.agentMu.Unlock()
	if c != nil {
		c.Remember(path, ops.FileInfo{Path: path, Exists: true, Size: fi.Size(), SHA256: sum, ModTicks: fi.ModTime().UnixNano()})
	}
}

// remoteSHA256 reads path back over SFTP and hashes it here, with little
// asked for at a time where the transport can (LeanDownloader): the agent
// is read back on a first contact from a new cache, where swdt's memory
// would otherwise grow by what is in flight.
func (n *Node) remoteSHA256(ctx context.Context, path string) (string, error) {
	h := sha256.New()
	download := n.conn.Download
	if n.extras.lean != nil {
		download = n.extras.lean.DownloadLean
	}
	if err := download(ctx, path, h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// removeOldAgents deletes other versions of the agent. One still running
// (another swdt's op) cannot be deleted on Windows; it goes next time.
// It runs while the new one's upload is under way: that upload's
// temporary file is not an older version.
func (n *Node) removeOldAgents(ctx context.Context, keep string) {
	entries, err := n.conn.ReadDir(ctx, ops.AgentDir)
	if err != nil {
		n.logger.Debug("list old swdt-agent versions", "err", err)
		return
	}
	for _, e := range entries {
		p := ops.AgentDir + `\` + e.Name()
		if e.IsDir() || !strings.HasPrefix(e.Name(), "swdt-agent-") || !strings.HasSuffix(strings.ToLower(e.Name()), ".exe") ||
			strings.EqualFold(p, keep) {
			continue
		}
		if err := n.conn.Remove(ctx, p); err != nil {
			n.logger.Debug("remove old swdt-agent", "path", p, "err", err)
			continue
		}
		n.logger.Info("removed an old swdt-agent", "path", p)
	}
}
