// Command swdt-agent runs swdt's node ops on a Windows node: one op per
// invocation, `swdt-agent op NAME`, the JSON request on stdin and one JSON
// result on stdout. swdt uploads it to C:\Program Files\swdt and runs it over
// SSH; it is not meant to be run by hand (see pkg/agent).
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
