// Package hashcache remembers, on this machine and per node, the size,
// last-write time and SHA-256 of the binaries swdt put on the node, so
// that a run with nothing changed does not read every binary on the node
// again. Nothing is stored on the node.
package hashcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/source"
)

// Cache remembers the size, last-write time and digest of destinations
// on one node. Implementations must be safe for concurrent use.
type Cache interface {
	// Known returns the record of destination, or nil.
	Known(destination string) *ops.FileInfo
	// Remember records what destination holds now.
	Remember(destination string, f ops.FileInfo)
}

// File is a Cache kept in a JSON file on this machine (one file per
// node), with the link's round-trip time measured on the last connection.
type File struct {
	path    string
	mu      sync.Mutex
	entries map[string]ops.FileInfo
	rtt     time.Duration
	inspect *ops.ProvisionInspectResponse
	dirty   bool
}

// fileFormat is the JSON of a File. Files written before the round-trip
// time was kept hold the map of entries alone.
type fileFormat struct {
	Files map[string]ops.FileInfo `json:"files"`
	// RTTMicros is the link's round-trip time, in microseconds (0: not
	// measured).
	RTTMicros int64 `json:"rttMicros,omitempty"`
	// Inspect is the destinations and services the last run's inspect
	// found (RememberInspect).
	Inspect *ops.ProvisionInspectResponse `json:"inspect,omitempty"`
}

// Open loads the cache at path; a missing or unreadable file starts an
// empty cache (it only costs a re-hash).
func Open(path string) *File {
	c := &File{path: path, entries: map[string]ops.FileInfo{}}
	raw, err := os.ReadFile(path)
	if err != nil {
		return c
	}
	var f fileFormat
	if json.Unmarshal(raw, &f) == nil && f.Files != nil {
		c.entries, c.rtt, c.inspect = f.Files, time.Duration(f.RTTMicros)*time.Microsecond, f.Inspect
		return c
	}
	if json.Unmarshal(raw, &c.entries) != nil {
		c.entries = map[string]ops.FileInfo{}
	}
	return c
}

// RTT is the link's round-trip time recorded by RememberRTT (ok false:
// none).
func (c *File) RTT() (rtt time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rtt, c.rtt > 0
}

// RememberRTT records the link's round-trip time measured on this
// connection, for the next run to expect before it connects.
func (c *File) RememberRTT(rtt time.Duration) {
	if rtt <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Microseconds: a change below that is no change.
	if rtt = rtt.Round(time.Microsecond); rtt != c.rtt {
		c.rtt, c.dirty = rtt, true
	}
}

// LastInspect is what RememberInspect recorded, nil when nothing was.
func (c *File) LastInspect() *ops.ProvisionInspectResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inspect
}

// RememberInspect records the destinations and services an inspect found
// (not its lock, journal or files' digests: those the node confirms
// every run), for the next run to plan with before it asks the node; the
// node checks that plan's services before it acts on it
// (ops.ServiceSwapRequest.Expect).
func (c *File) RememberInspect(found ops.ProvisionInspectResponse) {
	kept := &ops.ProvisionInspectResponse{Files: make([]ops.FileInfo, len(found.Files)), Services: found.Services}
	for i, f := range found.Files {
		kept.Files[i] = ops.FileInfo{Path: f.Path}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, err := json.Marshal(c.inspect); err == nil {
		if now, err := json.Marshal(kept); err == nil && string(old) == string(now) {
			return
		}
	}
	c.inspect, c.dirty = kept, true
}

// ForNode opens the cache of one node in swdt's cache directory (cacheDir,
// or the default when empty), keyed by the host and user it is reached
// as. It is nil when there is no cache directory: every destination is
// then hashed on the node.
func ForNode(cacheDir string, spec *v1alpha1.Node) *File {
	dir, err := source.CacheDir(cacheDir)
	if err != nil {
		return nil
	}
	c := spec.Spec.Credentials
	key := sha256.Sum256([]byte(c.Hostname + "\x00" + c.Username))
	return Open(filepath.Join(dir, "nodes", hex.EncodeToString(key[:12])+".json"))
}

// Known implements Cache.
func (c *File) Known(destination string) *ops.FileInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.entries[strings.ToLower(destination)]
	if !ok {
		return nil
	}
	return &f
}

// Remember implements Cache.
func (c *File) Remember(destination string, f ops.FileInfo) {
	if !f.Exists || len(f.SHA256) != 64 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[strings.ToLower(destination)] = ops.FileInfo{Path: destination, Exists: true, Size: f.Size, SHA256: f.SHA256, ModTicks: f.ModTicks}
	c.dirty = true
}

// Save writes the cache back if it changed.
func (c *File) Save() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return nil
	}
	raw, err := json.Marshal(fileFormat{Files: c.entries, RTTMicros: c.rtt.Microseconds(), Inspect: c.inspect})
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
