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
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/node"
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

	// notify relays interrupts to c until stop is called (signal.Notify;
	// tests send their own).
	notify func(c chan<- os.Signal) (stop func())

	// openVMHook, when set, replaces vm.Open (tests share one libvirt
	// connection between runs: the test driver's state lives as long as
	// its connection).
	openVMHook func(ctx context.Context, spec *v1alpha1.Node) (vm.Provider, error)
}

// Run runs swdt with args (without the program name) and returns the
// process exit code. The first interrupt is expected to cancel ctx (main
// uses NotifyContext); commands that swap binaries also watch for a
// second one (see env.interrupts).
func Run(ctx context.Context, streams Streams, args []string) int {
	return runEnv(ctx, &env{streams: streams, notify: notifySignals}, args)
}

func notifySignals(c chan<- os.Signal) func() {
	signal.Notify(c, interruptSignals()...)
	return func() { signal.Stop(c) }
}

// interruptSignals are the signals handled like Ctrl-C (DESIGN.md §9).
// SIGHUP, from a terminal that was closed, is one of them, so that a swap
// in progress still finishes; unless it is ignored (nohup), since the
// user then asked for the run to outlive the terminal. Windows delivers
// only os.Interrupt of these.
func interruptSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

// NotifyContext returns a copy of parent that is cancelled by the first
// signal swdt handles like Ctrl-C (SIGINT, SIGTERM and SIGHUP), for Run;
// stop releases the signals.
func NotifyContext(parent context.Context) (ctx context.Context, stop context.CancelFunc) {
	return signal.NotifyContext(parent, interruptSignals()...)
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
		report(e.ui, err)
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
		newExecCommand(e),
		newLogsCommand(e),
		newVMCommand(e),
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

// connect dials a node with the run's logger, warnings routed to warn and,
// on a terminal, a prompt for an encrypted key's passphrase.
func (e *env) connect(ctx context.Context, spec *v1alpha1.Node, warn func(msg string)) (*node.Node, error) {
	e.promptOnce.Do(func() { e.passphrase = e.ui.PassphrasePrompt(e.streams.In) })
	return vm.ConnectNode(ctx, *spec, node.ConnectOptions{Logger: e.ui.Logger(), Warn: warn, Passphrase: e.passphrase, NodeFile: e.configPath,
		Waiting: func(msg string) { e.ui.Step(spec.Name, "%s", msg) }}, e.openVM)
}

// loadConfig loads the -c file, keeps the nodes --node names (all without
// it) and shows their warnings. files are the local files the command may
// read: one of them that does not exist or cannot be read is a warning, as
// the command may not need it (swdt status without a local build), and one
// it needs is reported where it is read. Its errors carry exitcode.Usage.
func (e *env) loadConfig(files config.FileKind) (*config.Result, error) {
	return e.loadConfigWith(config.Options{Files: files})
}

// loadConfigWith is loadConfig with the loader's options.
func (e *env) loadConfigWith(opts config.Options) (*config.Result, error) {
	res, err := config.LoadWith(e.configPath, opts)
	if err != nil {
		return nil, err
	}
	if len(e.nodes) > 0 {
		var kept []v1alpha1.Node
		for _, name := range e.nodes {
			i := slices.IndexFunc(res.Nodes, func(n v1alpha1.Node) bool { return n.Name == name })
			if i < 0 {
				return nil, unknownNode(res, name)
			}
			if !slices.ContainsFunc(kept, func(n v1alpha1.Node) bool { return n.Name == name }) {
				kept = append(kept, res.Nodes[i])
			}
		}
		res.Nodes = kept
	}
	e.showWarnings(res)
	return res, nil
}

// showWarnings keeps the warnings of res about its nodes (or about the
// whole file) and shows them.
func (e *env) showWarnings(res *config.Result) {
	var kept []config.Problem
	for _, w := range res.Warnings {
		if w.Node == "" || slices.ContainsFunc(res.Nodes, func(n v1alpha1.Node) bool { return n.Name == w.Node }) {
			kept = append(kept, w)
			e.ui.Warn("%s", w)
		}
	}
	res.Warnings = kept
}

// interrupts is the two-stage Ctrl-C of every command that swaps a
// binary into a running service (DESIGN.md §9). The first interrupt
// cancels the run's context (main), which stops staging but lets a swap in
// progress finish so that its services run again; the second ends the
// returned context, to be passed as provision.Options.Abort, which gives
// up on the swap at once. warn tells the user which stage they are in.
// stop releases the signals.
func (e *env) interrupts(warn func(format string, args ...any)) (abort context.Context, stop func()) {
	abort, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	stopNotify := e.notify(sigs)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for count := 1; ; count++ {
			select {
			case <-done:
				return
			case <-sigs:
			}
			if count == 1 {
				warn("interrupted: letting a swap in progress finish so that its services run again; Ctrl-C again to give up now")
				continue
			}
			warn("interrupted again: giving up; check the services on the node (Get-Service)")
			cancel()
			return
		}
	})
	return abort, func() {
		stopNotify()
		close(done)
		wg.Wait()
		cancel()
	}
}

// report shows err once: every problem of a config file on its own line,
// anything else as one error.
func report(u *ui.UI, err error) {
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
