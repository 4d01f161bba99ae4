// Package app is the swdt command tree. Run is the whole CLI as a function
// of its streams and arguments, so tests drive it in-process.
//
// To add a command: write newXCommand(e *env) *cobra.Command in its own
// file, keep its flags in a small struct, do the work in a RunE that calls
// e.loadConfig() and hands the nodes to a workflow in pkg/, print through
// e.ui, and register it in newRootCommand. Return errors; never print them:
// Run reports every error exactly once and maps it to an exit code.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/kubeconn"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/vm"
)

// Streams are the standard streams of one run.
type Streams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// DefaultConfig is the config file used when neither -c nor SWDT_CONFIG
// names one.
const DefaultConfig = "node.yaml"

// env is what every command shares: the streams, the global flags and the
// UI built from them before any command runs.
type env struct {
	streams    Streams
	configPath string
	nodes      []string
	verbosity  int
	output     string
	noColor    bool
	ui         *ui.UI

	promptOnce sync.Once
	passphrase func(keyFile string) ([]byte, error)
	// progressOnce makes progress, the run's shared bars (sharedProgress).
	progressOnce sync.Once
	progress     *ui.Progress

	// notify relays interrupts to c until stop is called (signal.Notify;
	// tests send their own).
	notify func(c chan<- os.Signal) (stop func())

	// openVMHook, when set, replaces vm.Open (tests share one libvirt
	// connection between runs: the test driver's state lives as long as
	// its connection).
	openVMHook func(ctx context.Context, spec *v1alpha1.Node) (vm.Provider, error)

	// clusterNode is --cluster-node: the verb's node is that Node of the
	// rollout file's cluster, reached through the Kubernetes API; kube
	// are the transport's options, once pickNode has read the file.
	clusterNode string
	kube        *kubeconn.Options
}

// Run runs swdt with args (without the program name) and returns the
// process exit code. The first interrupt is expected to cancel ctx (main
// uses NotifyContext); commands that swap binaries also watch for a
// second one (see env.interrupts).
func Run(ctx context.Context, streams Streams, args []string) int {
	return runEnv(ctx, &env{streams: streams, notify: notifySignals}, args)
}

func runEnv(ctx context.Context, e *env, args []string) int {
	root := newRootCommand(e)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitcode.OK
	}
	if e.ui == nil {
		// Flags failed to parse before the UI was built.
		e.ui = ui.New(e.streams.Out, e.streams.ErrOut, ui.Options{Color: e.colorMode()})
	}
	if ctx.Err() != nil && !exitcode.IsQuiet(err) {
		// What was cut short is in err; the cause is the interrupt.
		e.ui.Error("interrupted: %v", err)
		return exitcode.Interrupted
	}
	if !exitcode.IsQuiet(err) {
		reportError(e.ui, err)
	}
	return exitcode.Code(err)
}

func newRootCommand(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "swdt",
		Short: "Drive Windows Server nodes over SSH for Kubernetes development",
		Long: `swdt (SIG Windows developer tool) drives Windows Server nodes over SSH
from one node YAML file: bootstrap them, hot-swap custom Kubernetes binaries
into their services, and deploy rancher/wins.`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          groupArgs,
		RunE:          showHelp,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return e.setup(cmd)
		},
	}
	root.SetIn(e.streams.In)
	root.SetOut(e.streams.Out)
	root.SetErr(e.streams.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return exitcode.WithCode(exitcode.Usage, err)
	})

	defaultConfig := DefaultConfig
	if v := os.Getenv("SWDT_CONFIG"); v != "" {
		defaultConfig = v
	}
	flags := root.PersistentFlags()
	flags.StringVarP(&e.configPath, "config", "c", defaultConfig, "node file (env SWDT_CONFIG)")
	flags.StringSliceVar(&e.nodes, "node", nil, "only these nodes of the -c file (repeatable or comma-separated; default: all)")
	_ = root.RegisterFlagCompletionFunc("node", func(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
		return e.completeNode(cmd, nil, "")
	})
	flags.CountVarP(&e.verbosity, "verbose", "v", "more detail on stderr: -v info, -vv debug")
	flags.StringVarP(&e.output, "output", "o", string(ui.FormatText), "output format: text or json")
	flags.BoolVar(&e.noColor, "no-color", false, "never colour output (also: NO_COLOR=1)")
	_ = root.MarkPersistentFlagFilename("config", "yaml", "yml")
	_ = root.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		formats := make([]string, len(ui.Formats))
		for i, f := range ui.Formats {
			formats[i] = string(f)
		}
		return formats, cobra.ShellCompDirectiveNoFileComp
	})

	root.AddCommand(
		newVersionCommand(e),
		newConfigCommand(e),
		newKubernetesCommand(e),
		newSetupCommand(e),
		newStatusCommand(e),
		newWinsCommand(e),
		newJoinCommand(e),
		newExecCommand(e),
		newLogsCommand(e),
		newCpCommand(e),
		newPortForwardCommand(e),
		newRestartCommand(e),
		newSSHCommand(e),
		newRebootCommand(e),
		newVMCommand(e),
		newRolloutCommand(e),
	)
	return root
}

// setup checks the global flags and builds the UI.
func (e *env) setup(cmd *cobra.Command) error {
	format, err := ui.ParseFormat(e.output)
	if err != nil {
		if cmd.Name() == "init" {
			err = fmt.Errorf("%w (to write a file, use --output-file)", err)
		}
		return exitcode.WithCode(exitcode.Usage, err)
	}
	e.ui = ui.New(e.streams.Out, e.streams.ErrOut, ui.Options{
		Format:    format,
		Color:     e.colorMode(),
		Verbosity: e.verbosity,
	})
	e.ui.Logger().Debug("swdt starting", "command", cmd.CommandPath(), "config", e.configPath)
	return nil
}

func (e *env) colorMode() ui.ColorMode {
	if e.noColor {
		return ui.ColorNever
	}
	return ui.ColorAuto
}

// reportError shows err once: every problem of a config file on its own line,
// anything else as one error.
func reportError(u *ui.UI, err error) {
	var cerr *config.Error
	if errors.As(err, &cerr) {
		for _, p := range cerr.Problems {
			u.Error("%s", p)
		}
		if n := len(cerr.Problems); n > 1 {
			u.Error("%s: %d problems", cerr.Path, n)
		}
		return
	}
	u.Error("%v", err)
}
