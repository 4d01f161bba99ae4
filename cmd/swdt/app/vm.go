package app

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/ui"
	"sigs.k8s.io/swdt/pkg/vm"
)

// defaultStopTimeout is how long `swdt vm stop` lets a guest shut down
// before it turns the VM off.
const defaultStopTimeout = 2 * time.Minute

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

// onVMs loads the config and runs fn on every node's VM in parallel. A
// node without spec.vm stops the run before any hypervisor is contacted.
func onVMs[T any](ctx context.Context, e *env, fn func(ctx context.Context, p vm.Provider) (T, error)) ([]fleet.Result[T], map[string]string, error) {
	res, err := e.loadConfig(config.PrivateKeyFile)
	if err != nil {
		return nil, nil, err
	}
	vmNames := map[string]string{}
	var missing []string
	for _, n := range res.Nodes {
		if n.Spec.VM == nil {
			missing = append(missing, n.Name)
			continue
		}
		vmNames[n.Name] = n.Spec.VM.Name
	}
	if len(missing) > 0 {
		return nil, nil, exitcode.WithCode(exitcode.Usage, fmt.Errorf("%s: node %s has no spec.vm: add one naming the VM and its hypervisor (see samples/vm.yaml)",
			res.Path, strings.Join(missing, ", ")))
	}
	results := fleet.Run(ctx, res.Nodes, 0, func(ctx context.Context, spec *v1alpha1.Node) (T, error) {
		var zero T
		p, err := e.openVM(ctx, spec)
		if err != nil {
			return zero, err
		}
		defer p.Close()
		return fn(ctx, p)
	})
	return results, vmNames, nil
}

// vmNodeJSON is one node in `swdt vm ... -o json` output: the node's and
// the VM's names, the subcommand's fields, and the error, if any.
type vmNodeJSON struct {
	Name   string
	VM     string
	Result any
	Error  error
}

// MarshalJSON flattens the result's fields next to name, vm and error.
func (n vmNodeJSON) MarshalJSON() ([]byte, error) {
	fields := map[string]any{}
	if n.Error == nil {
		raw, err := json.Marshal(n.Result)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, err
		}
	} else {
		fields["error"] = n.Error.Error()
	}
	fields["name"], fields["vm"] = n.Name, n.VM
	switch r := n.Result.(type) {
	case nil:
	case vmStartResult:
		fields["result"] = map[bool]string{true: resultUnchanged, false: resultChanged}[r.AlreadyRunning]
	case vm.Stopped:
		fields["result"] = map[bool]string{true: resultUnchanged, false: resultChanged}[r.AlreadyOff]
	case vmSnapshotResult, vmRevertResult:
		fields["result"] = resultChanged
	}
	if n.Error != nil {
		fields["result"] = resultFailed
	}
	return json.Marshal(fields)
}

// printVM prints the results as {"nodes": [...]} or as a table whose
// rows come from rows (several per node, or none); a node that failed
// gets one row saying so, its error is reported once at the end.
func printVM[T any](e *env, results []fleet.Result[T], vmNames map[string]string, headers []string, rows func(T) [][]string) error {
	if e.ui.Format() == ui.FormatJSON {
		doc := struct {
			docMeta
			Nodes []vmNodeJSON `json:"nodes"`
		}{docMeta: meta("VMReport"), Nodes: []vmNodeJSON{}}
		for _, r := range results {
			doc.Nodes = append(doc.Nodes, vmNodeJSON{Name: r.Node, VM: vmNames[r.Node], Result: r.Value, Error: r.Err})
		}
		if err := e.ui.JSON(doc); err != nil {
			return err
		}
		return fleet.Err(results, nil)
	}
	var table [][]string
	for _, r := range results {
		if r.Err != nil {
			row := []string{r.Node, vmNames[r.Node], "failed: see the error below"}
			for len(row) < len(headers) {
				row = append(row, "-")
			}
			table = append(table, row)
			continue
		}
		for _, row := range rows(r.Value) {
			table = append(table, append([]string{r.Node, vmNames[r.Node]}, row...))
		}
	}
	if err := e.ui.Table(append([]string{"NODE", "VM"}, headers...), table); err != nil {
		return err
	}
	return fleet.Err(results, nil)
}

type vmStatusResult struct {
	Status vm.Status `json:"status"`
}

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
			results, names, err := onVMs(cmd.Context(), e, func(ctx context.Context, p vm.Provider) (vmStatusResult, error) {
				st, err := p.Status(ctx)
				return vmStatusResult{Status: st}, err
			})
			if err != nil {
				return err
			}
			return printVM(e, results, names, []string{"PROVIDER", "HYPERVISOR", "STATE", "SNAPSHOTS", "CURRENT"},
				func(r vmStatusResult) [][]string {
					s := r.Status
					return [][]string{{string(s.Provider), s.Hypervisor, string(s.State), strconv.Itoa(s.Snapshots), orDash(s.CurrentSnapshot)}}
				})
		},
	}
}

type vmStartResult struct {
	AlreadyRunning bool `json:"alreadyRunning"`
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
			results, names, err := onVMs(cmd.Context(), e, func(ctx context.Context, p vm.Provider) (vmStartResult, error) {
				already, err := p.Start(ctx)
				return vmStartResult{AlreadyRunning: already}, err
			})
			if err != nil {
				return err
			}
			return printVM(e, results, names, []string{"RESULT"}, func(r vmStartResult) [][]string {
				if r.AlreadyRunning {
					return [][]string{{"already running"}}
				}
				return [][]string{{"started"}}
			})
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
			results, names, err := onVMs(cmd.Context(), e, func(ctx context.Context, p vm.Provider) (vm.Stopped, error) {
				return p.Stop(ctx, timeout)
			})
			if err != nil {
				return err
			}
			return printVM(e, results, names, []string{"RESULT"}, func(r vm.Stopped) [][]string {
				switch {
				case r.AlreadyOff:
					return [][]string{{"already off"}}
				case r.Forced:
					return [][]string{{fmt.Sprintf("turned off (no shutdown within %s)", timeout)}}
				}
				return [][]string{{"shut down"}}
			})
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", defaultStopTimeout, "how long the guest may take to shut down before the VM is turned off")
	return cmd
}

type vmSnapshotResult struct {
	Snapshot string `json:"snapshot"`
}

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
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := vm.CheckSnapshotName(name); err != nil {
				return err
			}
			results, names, err := onVMs(cmd.Context(), e, func(ctx context.Context, p vm.Provider) (vmSnapshotResult, error) {
				return vmSnapshotResult{Snapshot: name}, p.Snapshot(ctx, name)
			})
			if err != nil {
				return err
			}
			return printVM(e, results, names, []string{"SNAPSHOT", "RESULT"}, func(r vmSnapshotResult) [][]string {
				return [][]string{{r.Snapshot, "taken"}}
			})
		},
	}
}

type vmRevertResult struct {
	Snapshot string   `json:"snapshot"`
	State    vm.State `json:"state"`
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
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			results, names, err := onVMs(cmd.Context(), e, func(ctx context.Context, p vm.Provider) (vmRevertResult, error) {
				st, err := p.Revert(ctx, name)
				return vmRevertResult{Snapshot: name, State: st}, err
			})
			if err != nil {
				return err
			}
			return printVM(e, results, names, []string{"SNAPSHOT", "STATE"}, func(r vmRevertResult) [][]string {
				return [][]string{{r.Snapshot, string(r.State)}}
			})
		},
	}
}

type vmSnapshotsResult struct {
	Snapshots []vm.Snapshot `json:"snapshots"`
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
			results, names, err := onVMs(cmd.Context(), e, func(ctx context.Context, p vm.Provider) (vmSnapshotsResult, error) {
				snaps, err := p.Snapshots(ctx)
				if snaps == nil {
					snaps = []vm.Snapshot{}
				}
				return vmSnapshotsResult{Snapshots: snaps}, err
			})
			if err != nil {
				return err
			}
			return printVM(e, results, names, []string{"SNAPSHOT", "CREATED", "PARENT", "CURRENT"}, func(r vmSnapshotsResult) [][]string {
				if len(r.Snapshots) == 0 {
					return [][]string{{"(none)", "-", "-", "-"}}
				}
				var rows [][]string
				for _, s := range r.Snapshots {
					current := ""
					if s.Current {
						current = "*"
					}
					rows = append(rows, []string{s.Name, s.Created.Local().Format(time.DateTime), orDash(s.Parent), current})
				}
				return rows
			})
		},
	}
}

type vmIPResult struct {
	Addresses []vm.Address `json:"addresses"`
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
			results, names, err := onVMs(cmd.Context(), e, func(ctx context.Context, p vm.Provider) (vmIPResult, error) {
				addrs, err := p.Addresses(ctx)
				if addrs == nil {
					addrs = []vm.Address{}
				}
				return vmIPResult{Addresses: addrs}, err
			})
			if err != nil {
				return err
			}
			return printVM(e, results, names, []string{"INTERFACE", "MAC", "ADDRESS", "SOURCE"}, func(r vmIPResult) [][]string {
				if len(r.Addresses) == 0 {
					return [][]string{{"(none)", "-", "-", "-"}}
				}
				var rows [][]string
				for _, a := range r.Addresses {
					rows = append(rows, []string{a.Interface, orDash(a.MAC), a.IP, a.Source})
				}
				return rows
			})
		},
	}
}

// exactArgs is cobra.ExactArgs as a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		return exitcode.WithCode(exitcode.Usage, cobra.ExactArgs(n)(cmd, args))
	}
}
