package app

import (
	"context"
	"os"
	"testing"
)

// asSwdt makes the test binary run as swdt itself (its arguments after the
// program name), for tests that must kill a real swdt process.
const asSwdt = "SWDT_TEST_RUN_AS_SWDT"

func TestMain(m *testing.M) {
	if os.Getenv(asSwdt) == "1" {
		os.Exit(Run(context.Background(), Streams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:]))
	}
	os.Exit(m.Run())
}
