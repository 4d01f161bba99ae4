package app

import (
	"strings"
)

// hint is a swdt command line to suggest to the user: with the node file
// they gave (-c or SWDT_CONFIG) and their --node, so that it acts on the
// same nodes when pasted, e.g. "swdt -c nodevm.yaml vm revert NAME".
func (e *env) hint(args string) string {
	s := "swdt"
	if e.configPath != DefaultConfig {
		s += " -c " + shellWord(e.configPath)
	}
	if len(e.nodes) > 0 {
		s += " --node " + shellWord(strings.Join(e.nodes, ","))
	}
	return s + " " + args
}

// shellWord quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./:,=+@ (a path with a space).
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,=+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
