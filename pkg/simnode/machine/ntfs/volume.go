package ntfs

import (
	"os"
	"sync"
	"time"
)

// Volume is the machine's C: drive: the files below root (the state
// directory's fs/C), with what NTFS and Windows decide about them. It
// shares its machine's lock (mu); an exported method takes it unless its
// name ends in Locked, and calls Host with it held.
type Volume struct {
	mu   *sync.Mutex
	host Host
	root string
	// writers counts the open write handles by Path.Key.
	writers map[string]int
	markers markerCache
	// scanHold and scans are the virus scanner's (scanner.go).
	scanHold time.Duration
	scans    map[string]*scan
	// shared and pending are the files held open sharing delete access
	// and the deleted ones whose names they keep (pending.go).
	shared  map[string]os.FileInfo
	pending map[string]string

	// hashMu guards hashes (trust.go's cache of agent digests) and
	// untrusted (the programs run that were not swdt-agent).
	hashMu    sync.Mutex
	hashes    map[string]agentHash
	untrusted []string
	// agentDigests lists further trusted agent digests (see TrustedAgent).
	agentDigests func() []string
	// cluster is the cluster size of a ReFS volume, which can clone
	// blocks; 0 on NTFS (clone.go).
	cluster int64
	// discards frees deleted files' data after their deletes (discard.go).
	discards *discards
}

// Host is what the volume needs of its machine; each method is called
// with the machine's lock held.
type Host interface {
	// Advance applies the machine's transitions that are due (a service
	// whose process exited no longer locks its image).
	Advance()
	// Now is the machine's clock.
	Now() time.Time
	// Save persists the machine's state (Security's maps are part of it).
	Save()
	// Security is the machine's record of owners and explicit ACLs.
	Security() Security
	// ImageLocked reports whether a running process's image is w;
	// ImageBelow whether one is w or below the folder w.
	ImageLocked(w Path) bool
	ImageBelow(w Path) bool
	// ImagesMoved makes the processes whose image is from (or below it)
	// run the file at to: a rename keeps them running the renamed file.
	ImagesMoved(from, to Path)
	// HeldOpen reports whether another program holds w open without
	// sharing delete access (the HeldOpen fault).
	HeldOpen(w Path) bool
	// SharedOpen names the files another program holds open sharing
	// delete access (the SharedOpen fault; pending.go).
	SharedOpen() []string
	// LegacyDelete reports whether a deleted file keeps its name while
	// such a handle is open (Windows before 1903; pending.go).
	LegacyDelete() bool
}

// Account is who a file operation runs as.
type Account struct {
	Name  string
	Admin bool
}

// Security is the record of owners (an account's name, by Path.Key; none
// for Administrators) and explicit ACLs (by Path.Key) of the volume.
type Security struct {
	ACLs   map[string]*ACL
	Owners map[string]string
}

// New is the volume below root of a machine whose lock is mu.
// scanHold, when positive, plays a virus scanner (scanner.go);
// agentDigests names further trusted agent builds (trust.go).
func New(mu *sync.Mutex, host Host, root string, scanHold time.Duration, agentDigests func() []string) *Volume {
	return &Volume{mu: mu, host: host, root: root, writers: map[string]int{}, markers: markerCache{},
		scanHold: scanHold, hashes: map[string]agentHash{}, agentDigests: agentDigests, discards: newDiscards(root)}
}

// Close waits until the data of the files deleted is freed.
func (v *Volume) Close() { v.discards.wait() }
