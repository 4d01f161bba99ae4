// Package wins plays rancher/wins (wins.exe): any existing file run with
// wins' cli or srv subcommand registers or unregisters the rancher-wins
// service, answers `cli hst get-version` from the registry through the
// named pipe its running service owns, and runs a whitelisted process
// (`cli prc run`) as wins does, renamed to rancher-wins-<name>.
//
// It must never run anything, and changes the machine only through
// machine.Node's methods.
package wins
