package app

import (
	"path/filepath"

	"github.com/spf13/pflag"

	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/source"
)

// transferFlags say how staged binaries travel: compressed, and as a patch
// against the node's current binary when swdt kept a copy of it.
type transferFlags struct {
	compress  compressValue
	delta     bool
	storeSize byteSize
}

func (t *transferFlags) add(fl *pflag.FlagSet) {
	t.compress = compressValue{Auto: true}
	t.storeSize = byteSize(delta.DefaultStoreSize)
	fl.Var(&t.compress, "compress", "compress uploads: auto (by the link's speed), off, or a level from 1 (fastest) to 4 (smallest)")
	fl.BoolVar(&t.delta, "delta", true, "send a patch against the binary on the node when swdt kept a copy of it (needs --compress other than off)")
	fl.Var(&t.storeSize, "delta-cache-size", "how much swdt keeps of what it sent, for patches (least recently used copies go first)")
}

// transfer returns the run's transfer settings; the copies for patches
// live under the cache directory.
func (t transferFlags) transfer(cacheDir string) hotswap.Transfer {
	tr := hotswap.Transfer{Compress: delta.Mode(t.compress)}
	if !t.delta {
		return tr
	}
	if dir, err := source.CacheDir(cacheDir); err == nil {
		tr.Store = &delta.Store{Dir: filepath.Join(dir, "sent"), MaxBytes: int64(t.storeSize)}
	}
	return tr
}

// compressValue is --compress as a flag value.
type compressValue delta.Mode

func (c *compressValue) String() string { return delta.Mode(*c).String() }
func (c *compressValue) Type() string   { return "auto|off|1-4" }
func (c *compressValue) Set(s string) error {
	m, err := delta.ParseMode(s)
	if err != nil {
		return err
	}
	*c = compressValue(m)
	return nil
}
