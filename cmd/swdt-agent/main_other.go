//go:build !windows

package main

import (
	"context"
	"fmt"
	"os"
)

func run(context.Context, []string) int {
	fmt.Fprintln(os.Stderr, "swdt-agent runs only on Windows: swdt uploads it to the node (build it with GOOS=windows, see `make agent`)")
	return 1
}
