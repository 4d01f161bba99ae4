package main

import (
	"context"
	"os"
	"runtime"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/winos"
)

func run(ctx context.Context, args []string) int {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	self := agent.Self{Path: exe, Version: version, GOARCH: runtime.GOARCH}
	return agent.Run(ctx, winos.New(), self, args, os.Stdin, os.Stdout)
}
