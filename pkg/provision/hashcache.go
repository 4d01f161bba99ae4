package provision

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"sigs.k8s.io/swdt/pkg/ops"
)

// HashCache remembers the size, last-write time and digest of destinations
// on one node, so that a run with nothing changed does not read every
// binary on the node again. Implementations must be safe for concurrent
// use.
type HashCache interface {
	// Known returns the record of destination, or nil.
	Known(destination string) *ops.FileInfo
	// Remember records what destination holds now.
	Remember(destination string, f ops.FileInfo)
}

// FileHashCache is a HashCache kept in a JSON file on this machine (one
// file per node). Nothing is stored on the node.
type FileHashCache struct {
	path    string
	mu      sync.Mutex
	entries map[string]ops.FileInfo
	dirty   bool
}

// OpenFileHashCache loads the cache at path; a missing or unreadable file
// starts an empty cache (it only costs a re-hash).
func OpenFileHashCache(path string) *FileHashCache {
	c := &FileHashCache{path: path, entries: map[string]ops.FileInfo{}}
	raw, err := os.ReadFile(path)
	if err == nil && json.Unmarshal(raw, &c.entries) != nil {
		c.entries = map[string]ops.FileInfo{}
	}
	return c
}

// Known implements HashCache.
func (c *FileHashCache) Known(destination string) *ops.FileInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.entries[strings.ToLower(destination)]
	if !ok {
		return nil
	}
	return &f
}

// Remember implements HashCache.
func (c *FileHashCache) Remember(destination string, f ops.FileInfo) {
	if !f.Exists || len(f.SHA256) != 64 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[strings.ToLower(destination)] = ops.FileInfo{Path: destination, Exists: true, Size: f.Size, SHA256: f.SHA256, ModTicks: f.ModTicks}
	c.dirty = true
}

// Save writes the cache back if it changed.
func (c *FileHashCache) Save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return nil
	}
	raw, err := json.Marshal(c.entries)
	if err != nil {
		return fmt.Errorf("encode hash cache: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("save hash cache: %w", err)
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("save hash cache: %w", err)
	}
	if err := os.Rename(tmp, c.path); err != nil {
		return fmt.Errorf("save hash cache: %w", err)
	}
	c.dirty = false
	return nil
}
