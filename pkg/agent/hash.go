package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"sigs.k8s.io/swdt/pkg/winos"
)

// hashFile returns the lower-case hex SHA-256 of a file on the node.
func hashFile(w winos.OS, path string) (string, error) {
	f, err := w.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
