//go:build !unix

package delta

import "os"

// mapTable maps nothing here: the saved index is read (LoadIndex).
func mapTable(*os.File, int64, int64) ([]uint64, func(), bool) { return nil, nil, false }
