package machine

import "time"

// SetModTime sets a file's last-write time, for a test that needs a file
// to be old (a lock not renewed for a while) without waiting.
func (n *Node) SetModTime(p string, t time.Time) error { return n.m.vol.Chtimes(p, t, t) }
