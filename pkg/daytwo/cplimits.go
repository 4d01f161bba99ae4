package daytwo

import (
	"fmt"

	"sigs.k8s.io/swdt/internal/winname"
)

// CopyLimits bound what a copy from a node creates on this machine: a
// node's listing is not trusted to be small or finite.
type CopyLimits struct {
	// Entries is the most files and folders one copy creates.
	Entries int
	// Depth is the deepest folder, counted from the copied folder.
	Depth int
	// Bytes is the most file data one copy writes.
	Bytes int64
}

// The limits a copy from a node has unless told otherwise.
const (
	DefaultCopyEntries       = 100_000
	DefaultCopyDepth         = 64
	DefaultCopyBytes   int64 = 64 << 30
)

// orDefault fills the limits left at zero with the defaults.
func (l CopyLimits) orDefault() CopyLimits {
	if l.Entries <= 0 {
		l.Entries = DefaultCopyEntries
	}
	if l.Depth <= 0 {
		l.Depth = DefaultCopyDepth
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultCopyBytes
	}
	return l
}

// LimitError is a copy from a node stopped by one of its CopyLimits.
type LimitError struct {
	// What is "entries", "depth" or "bytes"; Limit the bound; Flag the
	// flag of swdt cp that raises it.
	What  string
	Limit int64
	Flag  string
	// Path is where on the node the bound was reached.
	Path string
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: the copy would go past %d %s, its limit; nothing more was copied (raise it with %s if the node is yours and this is expected)", e.Path, e.Limit, e.What, e.Flag)
}

// NameError is a name a node listed that cannot be one file name on this
// machine (or on any Windows machine): a real Windows node never lists
// one, so the copy stops rather than guess what it means.
type NameError struct {
	// Dir is the folder on the node that listed it.
	Dir string
	Err error
}

func (e *NameError) Error() string {
	return fmt.Sprintf("the node listed a name in %s that cannot be a file name: %v; the copy stopped and wrote nothing for it", e.Dir, e.Err)
}

func (e *NameError) Unwrap() error { return e.Err }

// checkName refuses a name from the node's listing of dir that is not
// exactly one path element on every OS (winname's rules), so that
// joining it to a local folder can never leave that folder.
func checkName(dir, name string) error {
	if err := winname.Check(name); err != nil {
		return &NameError{Dir: dir, Err: err}
	}
	return nil
}
