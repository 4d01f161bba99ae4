package agent

import (
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
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
