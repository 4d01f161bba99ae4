package app

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ui/report"
	"sigs.k8s.io/swdt/pkg/vm"
)

// defaultStopTimeout is how long `swdt vm stop` lets a guest shut down
// before it turns the VM off.
const defaultStopTimeout = 2 * time.Minute

func newVMStatusCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show each VM's power state and snapshots",
		Long: `Ask each node's hypervisor for its VM's power state (running, off, paused,
saved, ...), how many snapshots it has and which one it descends from.
Nothing is changed.

` + vmExitCodes,
		Example: "  swdt vm status -c node.yaml",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := e.vmFleet()
			if err != nil {
				return err
			}
			return printVM(f.Status(cmd.Context()), func(r []vm.Report[vm.StatusResult]) error { return report.PrintVMStatus(e.ui, r) })
		},
	}
}

func newVMStartCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "start",
		Short: "Start each VM (or resume it); running ones are left alone",
		Long: `Start every node's VM: power it on, resume it when paused, restore it when
saved. A running VM is left alone. It does not wait for Windows to boot;
'swdt status' (or any command that connects) waits for SSH when the node
has no hostname.

` + vmExitCodes,
		Example: "  swdt vm start -c node.yaml",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := e.vmFleet()
			if err != nil {
				return err
			}
			return printVM(f.Start(cmd.Context()), func(r []vm.Report[vm.StartResult]) error { return report.PrintVMStart(e.ui, r) })
		},
	}
}

func newVMStopCommand(e *env) *cobra.Command {
	timeout := defaultStopTimeout
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Shut each VM down, turning it off when it does not stop in time",
		Long: `Ask every node's guest to shut down (ACPI or the guest agent under libvirt,
the shutdown integration service under Hyper-V) and, when the VM is not off
within --timeout, turn it off as a power cut would. A VM that is off is
left alone.

` + vmExitCodes,
		Example: "  swdt vm stop -c node.yaml\n  swdt vm stop -c node.yaml --timeout 30s",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return exitcode.WithCode(exitcode.Usage, fmt.Errorf("--timeout must be more than 0, for example 2m"))
			}
			f, err := e.vmFleet()
			if err != nil {
				return err
			}
			return printVM(f.Stop(cmd.Context(), timeout), func(r []vm.Report[vm.Stopped]) error { return report.PrintVMStop(e.ui, r, timeout) })
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", defaultStopTimeout, "how long the guest may take to shut down before the VM is turned off")
	return cmd
}

func newVMIPCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "ip",
		Short: "Show each VM's IP addresses, as its hypervisor knows them",
		Long: `Show the IP addresses of every node's VM: under libvirt from its networks'
DHCP leases, else the guest agent, else the host's ARP table; under
Hyper-V from the network adapters (reported by the guest's integration
services). A VM that has none yet shows (none). Nothing is changed.

` + vmExitCodes,
		Example: "  swdt vm ip -c node.yaml",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := e.vmFleet()
			if err != nil {
				return err
			}
			return printVM(f.Addresses(cmd.Context()), func(r []vm.Report[vm.AddressesResult]) error { return report.PrintVMAddresses(e.ui, r) })
		},
	}
}
