// Command swdt drives Windows Server nodes over SSH from a node YAML file:
// bootstrap them, hot-swap Kubernetes binaries into their services and
// deploy rancher/wins. See README.md.
package main

import (
	"context"
	"os"

	"sigs.k8s.io/swdt/cmd/swdt/app"
)

func main() {
	ctx, stop := app.NotifyContext(context.Background())
	code := app.Run(ctx, app.Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}
