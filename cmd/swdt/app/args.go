package app

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/exitcode"
)

// groupArgs rejects an unknown subcommand of a command that only groups
// others, as a usage error.
func groupArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %q?", strings.Join(s, `" or "`))
	}
	return exitcode.WithCode(exitcode.Usage, fmt.Errorf("%s (see '%s --help')", msg, cmd.CommandPath()))
}

// noArgs is cobra.NoArgs as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	return exitcode.WithCode(exitcode.Usage, cobra.NoArgs(cmd, args))
}

// showHelp is the RunE of commands that only group others.
func showHelp(cmd *cobra.Command, _ []string) error {
	return cmd.Help()
}
