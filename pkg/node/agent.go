package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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

// deliveries maps a machine's address to its *machineDeliveries. Entries
// are never removed: a process reaches few machines.
var deliveries sync.Map

// deliverInTurn is ensureAgent once no other delivery to the node's
// machine from this process is under way (the one that waited then finds
// the agent in place, verified). arrived is true when the agent was put
// in place after since, by this delivery or another.
func (n *Node) deliverInTurn(ctx context.Context, since time.Time) (path string, arrived bool, err error) {
	v, _ := deliveries.LoadOrStore(strings.ToLower(n.conn.Addr()), &machineDeliveries{turn: make(chan struct{}, 1)})
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
// where only Administrators and SYSTEM may write, and the file found
// there is read back and hashed the first time this process uses it
// (verified names the path already checked): not trusted by its size,
// nor by its own word. A file with other bytes is removed and the agent
// uploaded again; an upload is read back and hashed too. fresh is true
// when it uploaded the agent.
func (n *Node) ensureAgent(ctx context.Context, verified string) (path string, fresh bool, err error) {
	if path, ok := n.recordedAgent(ctx); ok {
		return path, false, nil
	}
	goarch := "amd64"
	if fi, err := n.conn.Stat(ctx, armDir); err == nil && fi.IsDir() {
		goarch = "arm64"
	}
	a, err := agentbin.For(goarch)
	if err != nil {
		return "", false, err
	}
	path = ops.AgentPath(a.SHA256)
	fi, err := n.conn.Stat(ctx, path)
	switch {
	case err == nil && strings.EqualFold(path, verified):
		n.confirmAgent(path)
		return path, false, nil
	case err == nil:
		sum, rerr := n.remoteSHA256(ctx, path)
		if rerr != nil {
			return "", false, n.notAdmin(fmt.Errorf("read back swdt-agent at %s to verify it: %w", path, rerr))
		}
		if sum == a.SHA256 && fi.Size() == int64(len(a.Binary)) {
			n.agentVerified(path, fi, sum)
			n.confirmAgent(path)
			return path, false, nil
		}
		n.logger.Warn("the file at the agent's path is not this swdt's agent: replacing it", "path", path, "sha256", sum)
		if err := n.conn.Remove(ctx, path); err != nil {
			return "", false, fmt.Errorf("%s holds a file that is not swdt-agent (SHA-256 %s) and it cannot be removed: %w; "+
				"remove it as an administrator and run again", path, sum, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("look for swdt-agent at %s: %w", path, err)
	}
	if err := n.conn.MkdirAll(ctx, ops.AgentDir); err != nil {
		return "", false, n.notAdmin(fmt.Errorf("create %s for swdt-agent: %w", ops.AgentDir, err))
	}
	var progress func(sent int64)
	end := func() {}
	if n.Transfer != nil {
		progress, end = n.Transfer("node "+n.Name+": upload swdt-agent (first contact)", int64(len(a.Binary)))
	}
	err = n.conn.Upload(ctx, bytes.NewReader(a.Binary), int64(len(a.Binary)), path, progress)
	end()
	if err != nil {
		// Another swdt may have delivered it meanwhile (its op running
		// keeps the file from being replaced): verified below like ours.
		if _, serr := n.conn.Stat(ctx, path); serr != nil {
			return "", false, fmt.Errorf("upload swdt-agent to %s: %w", path, err)
		}
	}
	sum, err := n.remoteSHA256(ctx, path)
	if err != nil {
		return "", false, fmt.Errorf("read back swdt-agent after uploading it to %s: %w", path, err)
	}
	if sum != a.SHA256 {
		_ = n.conn.Remove(ctx, path)
		return "", false, fmt.Errorf("swdt-agent uploaded to %s reads back with SHA-256 %s, not %s: the upload was corrupted and was removed; run again",
			path, sum, a.SHA256)
	}
	if fi, err := n.conn.Stat(ctx, path); err == nil {
		n.agentVerified(path, fi, sum)
	}
	// Its first run proves that it starts (the bytes are known good).
	raw, err := n.exec(ctx, path, ops.AgentInfo.Name, ops.AgentInfoRequest{})
	if err != nil {
		return "", false, fmt.Errorf("run swdt-agent after uploading it to %s: %w", path, err)
	}
	var info ops.AgentInfoResponse
	if err := json.Unmarshal(raw, &info); err != nil {
		return "", false, fmt.Errorf("op %s: decode result: %w", ops.AgentInfo.Name, err)
	}
	n.logger.Info("swdt-agent uploaded and verified", "path", path, "bytes", len(a.Binary), "goarch", goarch, "version", info.Version)
	n.removeOldAgents(ctx, path)
	n.agentMu.Lock()
	n.agentPath = path
	n.agentMu.Unlock()
	return path, true, nil
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
		sum, err := agentbin.Digest(goarch)
		if err != nil {
			continue
		}
		size, err := agentbin.Size(goarch)
		if err != nil {
			continue
		}
		path := ops.AgentPath(sum)
		if c.Known(path) == nil {
			continue
		}
		fi, err := n.quickStat(ctx, path)
		if err == nil && n.agentKnown(path, fi, sum, size) {
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
// last-write time (full precision, ops.Envelope.ImageModTime) against the
// record. SFTP version 3, which agentKnown compares with, shows whole
// seconds only: the agent's first report after a verification makes the
// record precise, and a later report that differs means the file changed
// within the second SFTP shows since it was verified. The record is then
// spoiled, so that the next delivery (in this process or another) reads
// the file back before it runs it, and the user is warned.
func (n *Node) agentRan(path string, imageModTime int64) {
	if imageModTime <= 0 {
		return
	}
	n.agentMu.Lock()
	c := n.agentCache
	n.agentMu.Unlock()
	if c == nil {
		return
	}
	rec := c.Known(path)
	if rec == nil || !rec.Exists || rec.ModTicks <= 0 || rec.ModTicks == imageModTime {
		return
	}
	sec := int64(time.Second)
	if rec.ModTicks%sec == 0 && rec.ModTicks/sec == imageModTime/sec {
		rec.ModTicks = imageModTime
		c.Remember(path, *rec)
		return
	}
	n.logger.Warn("swdt-agent's file changed since it was read back and verified: the next run reads it back again before it runs it",
		"path", path, "recorded", time.Unix(0, rec.ModTicks).UTC(), "now", time.Unix(0, imageModTime).UTC())
	rec.ModTicks = -1
	c.Remember(path, *rec)
	if v, ok := deliveries.Load(strings.ToLower(n.conn.Addr())); ok {
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

// remoteSHA256 reads path back over SFTP and hashes it here.
func (n *Node) remoteSHA256(ctx context.Context, path string) (string, error) {
	h := sha256.New()
	if err := n.conn.Download(ctx, path, h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// removeOldAgents deletes other versions of the agent. One still running
// (another swdt's op) cannot be deleted on Windows; it goes next time.
func (n *Node) removeOldAgents(ctx context.Context, keep string) {
	entries, err := n.conn.ReadDir(ctx, ops.AgentDir)
	if err != nil {
		n.logger.Debug("list old swdt-agent versions", "err", err)
		return
	}
	for _, e := range entries {
		p := ops.AgentDir + `\` + e.Name()
		if e.IsDir() || !strings.HasPrefix(e.Name(), "swdt-agent-") || strings.EqualFold(p, keep) {
			continue
		}
		if err := n.conn.Remove(ctx, p); err != nil {
			n.logger.Debug("remove old swdt-agent", "path", p, "err", err)
			continue
		}
		n.logger.Info("removed an old swdt-agent", "path", p)
	}
}
