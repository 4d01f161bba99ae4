package app

import (
	"context"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

func newPortForwardCommand(e *env) *cobra.Command {
	var address string
	cmd := &cobra.Command{
		Use:   "port-forward [NODE] [LOCAL:]REMOTE...",
		Short: "Forward local ports to ports on a node over its SSH connection",
		Long: `Listen on local ports and carry each connection made to them to a port on
the node's loopback (127.0.0.1 as the node sees it), through the node's
SSH connection (direct-tcpip, as ssh -L does), with the node file's keys,
agent, ProxyJump and known_hosts: kubelet's 10250, pprof, a debugger.
Several ports at once; until Ctrl-C.

  10250        local 10250 to the node's 10250
  8080:80      local 8080 to the node's 80
  :6060        a free local port (printed) to the node's 6060

NODE may be left out when --node names one or the file has one node.
The node's sshd must allow TCP forwarding (AllowTcpForwarding, on by
default). A stream the node refuses (nothing listens there) is a warning;
the other streams go on.

--cluster-node NAME takes the Node NAME of the cluster a rollout file
names instead of NODE, reached through the Kubernetes API with no SSH:
swdt's HostProcess pod on it (as swdt rollout makes it) and
pods/portforward, which reach the Node's own loopback. It needs create on
pods/portforward, and containerd 1.7.15 or 2.0 or later on the Node.

Exit codes: 0 ended by Ctrl-C; 1 the node could not be reached; 2 usage
or config error, or a local port that is taken.`,
		Example: `  swdt port-forward node1 10250
  swdt port-forward node1 8080:80 :6060
  swdt port-forward --node node1 --address 0.0.0.0 10250
  swdt port-forward -c rollout.yaml --cluster-node win-01 10250`,
		ValidArgsFunction: e.completeNode,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPortForward(cmd.Context(), e, args, address)
		},
	}
	cmd.Flags().StringVar(&address, "address", "127.0.0.1", "local address to listen on")
	e.addClusterNodeFlag(cmd)
	return cmd
}

func runPortForward(ctx context.Context, e *env, args []string, address string) error {
	spec, rest, err := e.pickNode("port-forward", args, false)
	if err != nil {
		return err
	}
	ports, err := daytwo.ParsePorts(rest)
	if err != nil {
		return err
	}
	err = daytwo.PortForward(ctx, spec, e.connect, ports, daytwo.ForwardOptions{
		Address: address,
		Warn:    func(msg string) { e.ui.Warn("%s", msg) },
		Ready: func(forwards []daytwo.Forward) {
			if err := report.PrintForwarding(e.ui, spec.Name, forwards); err != nil {
				e.ui.Warn("%v", err)
			}
		},
		Stream: func(f daytwo.Forward, err error) {
			if err != nil {
				e.ui.Warn("node %s: %s -> %s: %v", spec.Name, f.Local, f.Remote, err)
				return
			}
			e.ui.Logger().Info("handling connection", "node", spec.Name, "local", f.Local, "remote", f.Remote)
		},
	})
	return failureDocument(e, report.KindPortForward, spec.Name, err)
}
