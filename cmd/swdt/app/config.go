package app

import (
	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

func newConfigCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check or create node files",
		Args:  groupArgs,
		RunE:  showHelp,
	}
	cmd.AddCommand(newConfigValidateCommand(e), newConfigInitCommand(e))
	return cmd
}

func newConfigValidateCommand(e *env) *cobra.Command {
	var skipLocalFiles bool
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check a node file and list every problem in it",
		Long: `Check the node file named by -c: strict decoding (misspelled fields are
errors), defaults, validation of every field, and that the local files it
names exist and can be read (privateKey, authorizedKeys, and each local
path or file:// sourceURL). Each node gets a one-line summary; every
problem is listed with its file, line and field path. Exits 2 when the file
is invalid. Nothing is contacted.

Other commands only warn about a missing local file, as they may not need
it (swdt status without a local build); --skip-local-files checks a file
meant for another machine, or a template, without them.`,
		Example: "  swdt config validate -c node.yaml\n  swdt config validate -c node.yaml -o json\n" +
			"  swdt config validate -c template.yaml --skip-local-files",
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			opts := config.Options{Files: config.AllFiles, FilesRequired: true}
			if skipLocalFiles {
				opts = config.Options{}
			}
			res, err := e.loadConfigWith(opts)
			return report.PrintConfig(e.ui, e.configPath, res, err)
		},
	}
	cmd.Flags().BoolVar(&skipLocalFiles, "skip-local-files", false,
		"do not check that the local files the node file names exist (for a file meant for another machine, or a template)")
	return cmd
}
