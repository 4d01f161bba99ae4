package app

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
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
	File  string `json:"file"`
	Valid bool   `json:"valid"`
	// Result is passed or failed, as Valid says.
	Result   string           `json:"result"`
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
			"  swdt config validate -c template.yaml --skip-local-files",
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
	r.Result = checkResult(r.Valid)
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
