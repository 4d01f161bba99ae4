// Package agentbin holds the swdt-agent binaries that swdt uploads to its
// nodes, embedded when swdt is built (`make agent` puts them in dist/).
package agentbin

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

//go:embed dist
var dist embed.FS

// ErrNotBuilt means this swdt was built without the agent for an
// architecture, for example by `go install` (which cannot run `make agent`).
var ErrNotBuilt = errors.New("this swdt was built without swdt-agent")

// Agent is one embedded agent binary.
type Agent struct {
	// GOARCH is the Windows architecture it runs on (amd64, arm64).
	GOARCH string
	// Binary is the executable's content.
	Binary []byte
	// SHA256 is its lower-case hex digest.
	SHA256 string
}

// FileName is the name of the agent for goarch in dist/.
func FileName(goarch string) string { return "swdt-agent-windows-" + goarch + ".exe" }

// Digest returns the lower-case hex SHA-256 of the embedded agent for
// goarch: the digest `make agent` recorded beside it, so that swdt need not
// hash a few MB on every run to know the agent's path on a node.
func Digest(goarch string) (string, error) {
	raw, err := dist.ReadFile("dist/" + FileName(goarch) + ".sha256")
	if err == nil {
		if d := strings.TrimSpace(string(raw)); len(d) == 64 {
			return d, nil
		}
	}
	a, err := For(goarch)
	return a.SHA256, err
}

// Size returns the size of the embedded agent for goarch, without
// reading it.
func Size(goarch string) (int64, error) {
	fi, err := fs.Stat(dist, "dist/"+FileName(goarch))
	if err != nil {
		return 0, fmt.Errorf("%w for windows/%s: %w", ErrNotBuilt, goarch, err)
	}
	return fi.Size(), nil
}

// For returns the embedded agent for goarch, or an error wrapping
// ErrNotBuilt that says how to build one.
func For(goarch string) (Agent, error) {
	raw, err := dist.ReadFile("dist/" + FileName(goarch))
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(raw) == 0 {
		return Agent{}, fmt.Errorf("%w for windows/%s: build swdt with `make build` from a clone of the repository "+
			"(it builds the agent first), not with `go install`", ErrNotBuilt, goarch)
	}
	if err != nil {
		return Agent{}, fmt.Errorf("read the embedded agent: %w", err)
	}
	sum := sha256.Sum256(raw)
	return Agent{GOARCH: goarch, Binary: raw, SHA256: hex.EncodeToString(sum[:])}, nil
}
