package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ui"
)

func newConfigInitCommand(e *env) *cobra.Command {
	var (
		outputFile string
		opts       config.SampleOptions
	)
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Print a commented sample node file, or write it with --output-file",
		Long: `Print a commented node file that uses every field. With --output-file the
sample is written to that file (mode 0600, as it may come to hold a
password); an existing file is never overwritten. (-o is the global output
format, hence --output-file.)

--hostname, --username and --private-key fill in the sample's credentials
(the key's .pub file becomes setup.authorizedKeys; without --private-key,
the first of ~/.ssh/id_ed25519, id_ecdsa and id_rsa that exists); --only keeps only some
of its binaries, so that the file names no build you do not have.`,
		Example: "  swdt config init > node.yaml\n  swdt config init --output-file node.yaml\n" +
			"  swdt config init --output-file node.yaml --hostname 192.168.122.220 --username Administrator --only kubelet",
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			if e.ui.Format() == ui.FormatJSON {
				return exitcode.WithCode(exitcode.Usage, errors.New("swdt config init prints a YAML node file, which has no JSON form: leave out -o json (to write a file, use --output-file)"))
			}
			if home, err := os.UserHomeDir(); opts.PrivateKey == "" && err == nil {
				opts.PrivateKey = config.DefaultPrivateKey(home)
			}
			sample, err := config.SampleWith(opts)
			if err != nil {
				return exitcode.WithCode(exitcode.Usage, err)
			}
			if outputFile == "" {
				_, err := e.ui.Out().Write(sample)
				return err
			}
			if err := writeNew(outputFile, sample); err != nil {
				return err
			}
			e.ui.Success("wrote %s: edit it, then run 'swdt config validate -c %s'", outputFile, outputFile)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&outputFile, "output-file", "", "write the sample to this file instead of stdout (never overwrites)")
	fl.StringVar(&opts.Hostname, "hostname", "", "the node's address, host[:port] (spec.credentials.hostname)")
	fl.StringVar(&opts.Username, "username", "", "the administrator account to log in as (spec.credentials.username)")
	fl.StringVar(&opts.PrivateKey, "private-key", "", "the private key to log in with (spec.credentials.privateKey); FILE.pub becomes spec.setup.authorizedKeys")
	fl.StringSliceVar(&opts.Only, "only", nil, "keep only these of the sample's binaries: "+strings.Join(config.SampleNames, ", ")+" (wins: spec.wins)")
	_ = cmd.MarkFlagFilename("output-file", "yaml", "yml")
	_ = cmd.MarkFlagFilename("private-key")
	_ = cmd.RegisterFlagCompletionFunc("only", cobra.FixedCompletions(config.SampleNames, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// writeNew writes data to a file that must not exist yet.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return exitcode.WithCode(exitcode.Usage,
			fmt.Errorf("%s already exists: not overwriting it; remove it or choose another --output-file", path))
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
