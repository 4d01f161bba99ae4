// Package wine is simnode's Wine mode: the C: drive is the drive_c of a
// Wine prefix in the state directory, and the uploaded swdt-agent.exe
// really runs under Wine 8 (one persistent wineserver per node), against
// Wine's service control manager, registry, files and processes instead
// of package machine's model. It boots or copies the prefix and builds
// the DLLs Go programs need under Wine 8.0 (winedll).
//
// It must never run anything outside its prefix, and never stand in for
// what Wine does not do (see pkg/simnode/README.md, "Wine mode").
package wine
