package app

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"sigs.k8s.io/swdt/pkg/source"
)

// downloadFlags bound the downloads of http(s) sources, for every command
// that downloads them (kubernetes, wins), so both behave alike.
type downloadFlags struct {
	maxSize      byteSize
	stallTimeout time.Duration
	timeout      time.Duration
}

func (d *downloadFlags) add(fl *pflag.FlagSet) {
	d.maxSize = source.DefaultMaxDownloadSize
	fl.Var(&d.maxSize, "max-download-size", "largest http(s) source to download, in bytes or as a quantity such as 500Mi or 4Gi")
	durationFlag(fl, &d.stallTimeout, "download-stall-timeout", source.DefaultStallTimeout, false, "abandon a download that receives nothing for this long")
	durationFlag(fl, &d.timeout, "download-timeout", source.DefaultDownloadTimeout, false, "abandon a download that has not finished after this long, however slowly it still moves")
}

// resolver returns a source resolver with the flags' bounds.
func (d downloadFlags) resolver(cacheDir string, rehash bool) *source.Resolver {
	return &source.Resolver{CacheDir: cacheDir, Rehash: rehash, MaxDownloadSize: int64(d.maxSize),
		StallTimeout: d.stallTimeout, Timeout: d.timeout}
}

// byteSize is a flag holding a size in bytes, written as a Kubernetes
// quantity: 2147483648, 2Gi or 2G.
type byteSize int64

func (b *byteSize) String() string {
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}

func (b *byteSize) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("%q is not a size: write bytes or a quantity such as 500Mi or 4Gi", s)
	}
	n, ok := q.AsInt64()
	if !ok || n <= 0 {
		return fmt.Errorf("%q: the size must be more than 0 and a whole number of bytes", s)
	}
	*b = byteSize(n)
	return nil
}

func (b *byteSize) Type() string { return "size" }
