package app

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ui/report"
	"sigs.k8s.io/swdt/pkg/vm"
)

func newVMSnapshotCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "snapshot NAME",
		Short: "Take a snapshot (Hyper-V: checkpoint) of each VM",
		Long: `Take a snapshot named NAME of every node's VM: under libvirt an internal
snapshot of disks and, for a running VM, memory; under Hyper-V a checkpoint
of the VM's configured type. NAME is letters, digits, '.', '_', '+' and
'-'; a VM that already has a snapshot of that name is left alone and
reported. 'swdt vm revert NAME' goes back to it.

` + vmExitCodes,
		Example: "  swdt vm snapshot -c node.yaml before-containerd-1.7",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt vm snapshot needs a name for the snapshot, for example %s", e.hint("vm snapshot before-containerd-1.7")))
			}
			return exactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := vm.CheckSnapshotName(args[0]); err != nil {
				return err
			}
			f, err := e.vmFleet()
			if err != nil {
				return err
			}
			return printVM(f.Snapshot(cmd.Context(), args[0]), func(r []vm.Report[vm.SnapshotResult]) error { return report.PrintVMSnapshot(e.ui, r) })
		},
	}
}

func newVMRevertCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "revert NAME",
		Short: "Put each VM back to its snapshot NAME",
		Long: `Revert every node's VM to its snapshot NAME: the disks (and, for a snapshot
of a running VM, the memory) go back to what they were, and so does the
power state. Whatever changed since is lost. A VM without a snapshot of
that name is left alone and reported.

` + vmExitCodes,
		Example: "  swdt vm revert -c node.yaml before-containerd-1.7",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt vm revert needs the name of a snapshot to go back to; %s lists them", e.hint("vm snapshots")))
			}
			return exactArgs(1)(cmd, args)
		},
		ValidArgsFunction: e.completeSnapshot,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := e.vmFleet()
			if err != nil {
				return err
			}
			return printVM(f.Revert(cmd.Context(), args[0]), func(r []vm.Report[vm.RevertResult]) error { return report.PrintVMRevert(e.ui, r) })
		},
	}
}

func newVMSnapshotsCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "snapshots",
		Short: "List each VM's snapshots",
		Long: `List the snapshots (Hyper-V: checkpoints) of every node's VM, oldest first,
with the one the VM's state descends from marked current. Nothing is
changed.

` + vmExitCodes,
		Example: "  swdt vm snapshots -c node.yaml -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := e.vmFleet()
			if err != nil {
				return err
			}
			return printVM(f.Snapshots(cmd.Context()), func(r []vm.Report[vm.SnapshotsResult]) error { return report.PrintVMSnapshots(e.ui, r) })
		},
	}
}

// completionTimeout bounds what a completion may wait for: a shell is
// waiting.
const completionTimeout = 10 * time.Second

// completeSnapshot completes vm revert's NAME with the snapshots of the
// VMs of the -c file (or --node), each once.
func (e *env) completeSnapshot(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if err := e.setup(cmd); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	f, err := e.vmFleet()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	var names []string
	for _, r := range f.Snapshots(ctx) {
		for _, s := range r.Value.Snapshots {
			if !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
