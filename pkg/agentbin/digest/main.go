// Command digest writes FILE.sha256 (the lower-case hex SHA-256 of FILE)
// beside each FILE it is given: `make agent` records the agent's digest so
// that swdt knows the agent's path on a node without hashing it each run.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: digest FILE...")
		os.Exit(2)
	}
	for _, name := range os.Args[1:] {
		if err := write(name); err != nil {
			fmt.Fprintln(os.Stderr, "digest:", err)
			os.Exit(1)
		}
	}
}

func write(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return os.WriteFile(name+".sha256", []byte(hex.EncodeToString(h.Sum(nil))+"\n"), 0o644)
}
