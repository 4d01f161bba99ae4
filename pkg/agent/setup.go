package agent

import (
	"context"
	"errors"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// setupOps are the handlers of the setup ops (DESIGN.md §6).
var setupOps = []entry{
	handle(ops.NodeFacts, nodeFacts),
	handle(ops.SetupFacts, setupFacts),
	handle(ops.RDPSet, rdpSet),
	handle(ops.ChocoInstall, chocoInstall),
	handle(ops.ChocoPackages, chocoPackages),
	handle(ops.AuthorizedKeysAdd, authorizedKeysAdd),
}

// setupLimitSet bounds the child processes of the setup ops. Chocolatey
// downloads from the internet, so its installs get generous limits; a
// question to choco.exe or powershell.exe that takes minutes is hung.
type setupLimitSet struct {
	// chocoSetup bounds Chocolatey's install script, which may download
	// and install .NET Framework 4.8 (100+ MB) first.
	chocoSetup time.Duration
	// chocoPackage bounds `choco install` of one package.
	chocoPackage time.Duration
	// query bounds `choco --version`, `choco list` and the short fixed
	// scripts (language mode, firewall rules).
	query time.Duration
}

var setupLimits = setupLimitSet{chocoSetup: 30 * time.Minute, chocoPackage: 30 * time.Minute, query: 2 * time.Minute}

// setupRun runs a program with a time limit of its own. expired is true
// when that limit (not the caller's context) ended it; err is then nil.
func setupRun(ctx context.Context, w winos.OS, limit time.Duration, cmd winos.Command) (res winos.Result, expired bool, err error) {
	return setupBounded(ctx, limit, func(ctx context.Context) (winos.Result, error) { return w.Run(ctx, cmd) })
}

// setupScript is setupRun for a fixed script.
func setupScript(ctx context.Context, w winos.OS, limit time.Duration, s winos.Script, input []byte) (res winos.Result, expired bool, err error) {
	return setupBounded(ctx, limit, func(ctx context.Context) (winos.Result, error) { return w.RunScript(ctx, s, input) })
}

func setupBounded(ctx context.Context, limit time.Duration, run func(context.Context) (winos.Result, error)) (winos.Result, bool, error) {
	child, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	res, err := run(child)
	if err != nil && ctx.Err() == nil && errors.Is(child.Err(), context.DeadlineExceeded) {
		return res, true, nil
	}
	return res, false, err
}
