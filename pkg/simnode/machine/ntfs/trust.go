package ntfs

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"

	"sigs.k8s.io/swdt/pkg/agentbin"
)

// agentHash is a file's SHA-256 as last computed, valid while the host
// file's change stamp (changeStamp: device, inode and status-change time,
// which every write of its bytes moves, whoever writes them) stays the
// same and nothing wrote, renamed or removed the file through simnode.
// Size and modification time are not enough: a program can write other
// bytes of the same size and set the time back. Where the host has no
// change stamp, the bytes are hashed on every run.
type agentHash struct {
	change string
	sum    string
}

// TrustedAgent reports whether the file at p holds exactly one of the
// swdt-agent builds embedded in this binary (or named by
// front.Options.AgentDigests): only then does running it
// run swdt-agent. Any other bytes at the agent's path are some other
// program.
func (v *Volume) TrustedAgent(p string) bool {
	f, w, err := v.OpenRead(p)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	change, stamped := changeStamp(fi)
	v.hashMu.Lock()
	h, ok := v.hashes[w.Key()]
	v.hashMu.Unlock()
	if !ok || !stamped || h.change != change {
		s := sha256.New()
		if _, err := io.Copy(s, f); err != nil {
			return false
		}
		h = agentHash{change: change, sum: hex.EncodeToString(s.Sum(nil))}
		if stamped {
			v.hashMu.Lock()
			v.hashes[w.Key()] = h
			v.hashMu.Unlock()
		}
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		if d, err := agentbin.Digest(goarch); err == nil && d == h.sum {
			return true
		}
	}
	if v.agentDigests != nil {
		for _, d := range v.agentDigests() {
			if strings.EqualFold(strings.TrimSpace(d), h.sum) {
				return true
			}
		}
	}
	return false
}

// RanUntrusted records that path was run although it is not swdt-agent.
func (v *Volume) RanUntrusted(path string) {
	v.hashMu.Lock()
	defer v.hashMu.Unlock()
	v.untrusted = append(v.untrusted, path)
}

// UntrustedRuns lists the programs at the agent's path that ran although
// their bytes are not swdt-agent's (each also logged as "ran untrusted
// program PATH"), in order: a test proves that nothing planted ran by
// finding this empty.
func (v *Volume) UntrustedRuns() []string {
	v.hashMu.Lock()
	defer v.hashMu.Unlock()
	return append([]string(nil), v.untrusted...)
}

// forgetHash drops the cached digest of the file at key: it was opened
// for writing, renamed or removed.
func (v *Volume) forgetHash(key string) {
	v.hashMu.Lock()
	defer v.hashMu.Unlock()
	delete(v.hashes, key)
}
