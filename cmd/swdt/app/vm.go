package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/vm"
)

// vmExitCodes is the exit code paragraph every vm subcommand shares.
const vmExitCodes = `Exit codes: 0 done on every node, 1 failed on every node, 2 usage or config
error (a node without spec.vm, a VM or snapshot that does not exist),
3 failed on some nodes.`

func newVMCommand(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "vm",
		Short: "Start, stop, snapshot and revert the VM behind each node",
		Long: `Drive the virtual machine behind every node of the -c file, in parallel,
through its hypervisor as spec.vm says: libvirt (libvirtd's protocol over
its unix socket, or through SSH with qemu+ssh://) or Hyper-V (swdt-agent's
Hyper-V ops on the Hyper-V host, over SSH, or in this process when swdt runs
on the Hyper-V host). Every node of the file must have spec.vm.`,
		Args: groupArgs,
		RunE: showHelp,
	}
	cmd.AddCommand(
		newVMStatusCommand(e),
		newVMStartCommand(e),
		newVMStopCommand(e),
		newVMSnapshotCommand(e),
		newVMRevertCommand(e),
		newVMSnapshotsCommand(e),
		newVMIPCommand(e),
	)
	return cmd
}

// openVM connects to the hypervisor of spec's VM, through e.openVMHook
// when a test set one.
func (e *env) openVM(ctx context.Context, spec *v1alpha1.Node) (vm.Provider, error) {
	if e.openVMHook != nil {
		return e.openVMHook(ctx, spec)
	}
	e.promptOnce.Do(func() { e.passphrase = e.ui.PassphrasePrompt(e.streams.In) })
	return vm.Open(ctx, spec, vm.Options{
		Logger:     e.ui.Logger(),
		Warn:       func(msg string) { e.ui.Warn("node %s: %s", spec.Name, msg) },
		Passphrase: e.passphrase,
	})
}

// vmFleet loads the config and returns the VMs behind its nodes.
func (e *env) vmFleet() (*vm.Fleet, error) {
	res, err := e.loadConfig(config.PrivateKeyFile)
	if err != nil {
		return nil, err
	}
	f, err := vm.NewFleet(res.Nodes, e.openVM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", res.Path, err)
	}
	return f, nil
}

// printVM prints the reports with show and returns their outcome.
func printVM[T any](reports []vm.Report[T], show func([]vm.Report[T]) error) error {
	if err := show(reports); err != nil {
		return err
	}
	return vm.Err(reports)
}

// exactArgs is cobra.ExactArgs as a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return exitcode.WithCode(exitcode.Usage, cobra.ExactArgs(n)(cmd, args))
	}
}
