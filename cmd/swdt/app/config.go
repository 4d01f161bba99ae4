package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ui"
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

// nodeSummary is one node in `config validate` output.
type nodeSummary struct {
	Name         string   `json:"name"`
	Host         string   `json:"host"`
	Port         int      `json:"port"`
	Provisioners []string `json:"provisioners"`
	Wins         bool     `json:"wins"`
	// VM is provider/name of spec.vm, when set.
	VM string `json:"vm,omitempty"`
}

// validateReport is `config validate -o json` output.
type validateReport struct {
	docMeta
	File     string           `json:"file"`
	Valid    bool             `json:"valid"`
	Nodes    []nodeSummary    `json:"nodes"`
	Warnings []config.Problem `json:"warnings"`
	Problems []config.Problem `json:"problems"`
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
			"  swdt config validate -c samples/node.yaml --skip-local-files",
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			opts := config.Options{Files: config.AllFiles, FilesRequired: true}
			if skipLocalFiles {
				opts = config.Options{}
			}
			res, err := e.loadConfigWith(opts)
			if e.ui.Format() == ui.FormatJSON {
				if jerr := e.ui.JSON(newValidateReport(e.configPath, res, err)); jerr != nil {
					return errors.Join(err, jerr)
				}
			}
			if err != nil {
				return err
			}
			if e.ui.Format() == ui.FormatJSON {
				return nil
			}
			rows := make([][]string, 0, len(res.Nodes))
			for _, s := range summarize(res.Nodes) {
				provs := strconv.Itoa(len(s.Provisioners))
				if len(s.Provisioners) > 0 {
					provs += " (" + strings.Join(s.Provisioners, ", ") + ")"
				}
				host := s.Host + ":" + strconv.Itoa(s.Port)
				if s.Host == "" {
					host = "from the " + s.VM + " VM"
				}
				rows = append(rows, []string{s.Name, host, provs})
			}
			if err := e.ui.Table([]string{"NODE", "HOST", "PROVISIONERS"}, rows); err != nil {
				return err
			}
			nodes := "1 node"
			if len(res.Nodes) != 1 {
				nodes = fmt.Sprintf("%d nodes", len(res.Nodes))
			}
			e.ui.Success("%s is valid: %s", e.configPath, nodes)
			return nil
		},
	}
	cmd.Flags().BoolVar(&skipLocalFiles, "skip-local-files", false,
		"do not check that the local files the node file names exist (for a file meant for another machine, or a template)")
	return cmd
}

func newValidateReport(path string, res *config.Result, err error) validateReport {
	r := validateReport{docMeta: meta("ValidateReport"), File: path, Nodes: []nodeSummary{}, Warnings: []config.Problem{}, Problems: []config.Problem{}}
	if res != nil {
		r.Valid = true
		r.File = res.Path
		r.Nodes = summarize(res.Nodes)
		r.Warnings = append(r.Warnings, res.Warnings...)
	}
	var cerr *config.Error
	if errors.As(err, &cerr) {
		r.Problems = cerr.Problems
	}
	return r
}

func summarize(nodes []v1alpha1.Node) []nodeSummary {
	out := make([]nodeSummary, len(nodes))
	for i, n := range nodes {
		host, port := n.Spec.Credentials.HostPort()
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		provs := make([]string, len(n.Spec.Kubernetes.Provisioners))
		for j, p := range n.Spec.Kubernetes.Provisioners {
			provs[j] = p.Name
		}
		out[i] = nodeSummary{Name: n.Name, Host: host, Port: port, Provisioners: provs, Wins: n.Spec.Wins != nil}
		if v := n.Spec.VM; v != nil {
			out[i].VM = string(v.Provider) + "/" + v.Name
		}
	}
	return out
}

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
(the key's .pub file becomes setup.authorizedKeys); --only keeps only some
of its binaries, so that the file names no build you do not have.`,
		Example: "  swdt config init > node.yaml\n  swdt config init --output-file node.yaml\n" +
			"  swdt config init --output-file node.yaml --hostname 192.168.122.220 --username Administrator --only kubelet",
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
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
