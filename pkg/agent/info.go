package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

var infoOps = []entry{{name: ops.AgentInfo.Name, run: agentInfo}}

// agentInfo hashes the agent's own executable: swdt compares the digest
// with the one it uploaded before it trusts the agent.
func agentInfo(_ context.Context, w winos.OS, self Self, _ json.RawMessage) (any, error) {
	digest, err := hashFile(w, self.Path)
	if err != nil {
		return nil, fmt.Errorf("hash the agent itself: %w", err)
	}
	return ops.AgentInfoResponse{Path: self.Path, SHA256: digest, Version: self.Version, GOARCH: self.GOARCH}, nil
}

// hashFile returns the lower-case hex SHA-256 of a file on the node.
func hashFile(w winos.OS, path string) (string, error) {
	f, err := w.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
