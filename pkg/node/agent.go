package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/agentbin"
	"sigs.k8s.io/swdt/pkg/ops"
)

// DefaultAgentTimeout bounds the agent's delivery on first contact
// (looking for it, uploading a few MB, running it once) when the caller's
// context has no deadline.
const DefaultAgentTimeout = 5 * time.Minute

// agentGuess returns where the agent should be: the path it answered at
// (known), or else the path of this swdt's amd64 agent, the one nearly
// every node runs.
func (n *Node) agentGuess() (path string, known bool, err error) {
	if p := n.agent(); p != "" {
		return p, true, nil
	}
	digest, err := agentbin.Digest("amd64")
	if err != nil {
		return "", false, err
	}
	return ops.AgentPath(digest), false, nil
}

// confirmAgent records that the agent answered at path.
func (n *Node) confirmAgent(path string) {
	n.agentMu.Lock()
	defer n.agentMu.Unlock()
	if n.agentPath == "" {
		n.logger.Info("swdt-agent is on the node, nothing sent", "path", path)
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
// was uploaded now; a delivery cut off by the bound is a *TimeoutError.
func (n *Node) deliver(ctx context.Context) (string, bool, error) {
	bound := DefaultAgentTimeout
	if dl, ok := ctx.Deadline(); ok {
		bound = time.Until(dl)
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	path, fresh, err := n.ensureAgent(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "", false, &TimeoutError{Node: n.Name, Op: "deliver swdt-agent", After: bound, Err: err}
	}
	return path, fresh, err
}

// armDir exists only on Windows for ARM64 (it holds the ARM32 system
// files): its presence picks the arm64 agent without running anything.
const armDir = `C:\Windows\SysArm32`

// ensureAgent looks for the agent of the node's architecture at its
// content-addressed path under ops.AgentDir and uploads it when it is
// missing, then proves the upload by running it (agent-info reports the
// SHA-256 of its own executable) and removes other versions. fresh is
// true when it uploaded the agent.
func (n *Node) ensureAgent(ctx context.Context) (path string, fresh bool, err error) {
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
	case err == nil && fi.Size() == int64(len(a.Binary)):
		n.confirmAgent(path)
		return path, false, nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("look for swdt-agent at %s: %w", path, err)
	}
	if err := n.conn.MkdirAll(ctx, ops.AgentDir); err != nil {
		return "", false, fmt.Errorf("create %s for swdt-agent: %w", ops.AgentDir, err)
	}
	if err := n.conn.Upload(ctx, bytes.NewReader(a.Binary), int64(len(a.Binary)), path, nil); err != nil {
		// Another swdt may have delivered it meanwhile (its op running
		// keeps the file from being replaced): verified below like ours.
		if fi, serr := n.conn.Stat(ctx, path); serr != nil || fi.Size() != int64(len(a.Binary)) {
			return "", false, fmt.Errorf("upload swdt-agent to %s: %w", path, err)
		}
	}
	raw, err := n.exec(ctx, path, ops.AgentInfo.Name, ops.AgentInfoRequest{})
	if err != nil {
		return "", false, fmt.Errorf("run swdt-agent after uploading it to %s: %w", path, err)
	}
	var info ops.AgentInfoResponse
	if err := json.Unmarshal(raw, &info); err != nil {
		return "", false, fmt.Errorf("op %s: decode result: %w", ops.AgentInfo.Name, err)
	}
	if info.SHA256 != a.SHA256 {
		_ = n.conn.Remove(ctx, path)
		return "", false, fmt.Errorf("swdt-agent uploaded to %s reads back with SHA-256 %s, not %s: the upload was corrupted and was removed; run again",
			path, info.SHA256, a.SHA256)
	}
	n.logger.Info("swdt-agent uploaded and verified", "path", path, "bytes", len(a.Binary), "goarch", goarch)
	n.removeOldAgents(ctx, path)
	n.agentMu.Lock()
	n.agentPath = path
	n.agentMu.Unlock()
	return path, true, nil
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
