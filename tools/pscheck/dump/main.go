// Command dump writes every fixed PowerShell script swdt-agent may run on a
// node into a directory for check.mjs (see package pscheck).
//
// Usage: go run ./tools/pscheck/dump DIR
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/swdt/tools/pscheck"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dump DIR")
		os.Exit(2)
	}
	names, err := pscheck.Dump(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "dump:", err)
		os.Exit(1)
	}
	fmt.Printf("dump: wrote %d scripts to %s\n", len(names), os.Args[1])
}
