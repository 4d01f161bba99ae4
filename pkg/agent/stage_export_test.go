package agent

import (
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// DecodeStaged is the swap op's decoding of one encoded upload (no
// inline data), for tests: the staged file's facts, what could not be
// cleaned up after a good decode, and why the decode failed.
func DecodeStaged(w winos.OS, it ops.StageDecodeItem) (info ops.FileInfo, leftover, err error) {
	return decodeStaged(w, it, nil)
}
