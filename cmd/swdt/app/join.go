package app

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/join"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// joinFlags are the flags of `swdt join`.
type joinFlags struct {
	reset    bool
	cacheDir string
	swap     swapFlags
	download downloadFlags
}

func newJoinCommand(e *env) *cobra.Command {
	var f joinFlags
	cmd := &cobra.Command{
		Use:   "join",
		Short: "Make each node a Windows worker of your cluster (kubelet, bootstrap token, Node)",
		Long: `Join every node of the -c file that has spec.kubernetes.join to the cluster its
kubeconfig names (kind, minikube, kubeadm: any control plane whose
kubeconfig may create bootstrap tokens), in parallel.

Before anything changes, swdt checks that the control plane answers and
lets the kubeconfig's user create bootstrap tokens, that the kubelet's
version (the kubelet provisioner's version, else the control plane's) is
allowed by the version-skew policy, that the node is not joined to
another cluster, and that no other machine has the Node's name.

Then, as sig-windows-tools' scripts set a node up: when the Windows
Containers feature is off, it is installed and the node rebooted (as swdt
reboot --wait) once. As kubeadm join does on Windows: a bootstrap token is created, the
cluster CA, a bootstrap kubeconfig and a KubeletConfiguration are written
under C:\etc\kubernetes and C:\var\lib\kubelet (readable by Administrators
and SYSTEM only), the kubelet provisioner's binary is installed through the
hot-swap and registered as the kubelet service (--windows-service, no nssm
or PowerShell wrapper), the Node must register and renew its Lease, and
the token is deleted. An inbound firewall rule opens the kubelet's port
10250 (and kube-proxy's 10256 with a kube-proxy service), and containerd,
the kubelet and kube-proxy get restart actions and ErrorControl Normal. A
second run changes nothing and says unchanged.

A provisioner's sourceURL release:kubernetes, release:containerd or
release:cni takes its binary from that official release (its version;
the kubelet's defaults to the control plane's), checked against the
release's checksum file; SWDT_KUBERNETES_RELEASE_URL,
SWDT_CONTAINERD_RELEASE_URL and SWDT_CNI_RELEASE_URL name mirrors.
containerd's other binaries (its shim) and binaries of service None
(the CNI plugins, in C:\opt\cni\bin) are installed with it.

--reset undoes it: the kubelet service and files, swdt's firewall rules, the
Node and swdt's bootstrap tokens. It ends the processes that still run the
binaries it removes (the shims of pod sandboxes, which outlive containerd).
The node is reset even when the cluster is gone, unreachable or refuses the
kubeconfig: what could not be deleted in the cluster is then listed (-o
json: leftInCluster) and the exit code says the reset is incomplete.

Exit codes: 0 joined (or reset), 1 failure, 2 the file is invalid, 3 some
nodes failed, or a reset left something in the cluster or a file in use.`,
		Example: "  swdt join -c node.yaml\n  swdt join -c node.yaml -o json\n  swdt join -c node.yaml --reset",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runJoin(cmd.Context(), e, f)
		},
	}
	cmd.Flags().BoolVar(&f.reset, "reset", false, "undo the join: kubelet service and files, the Node, swdt's bootstrap tokens")
	cmd.Flags().StringVar(&f.cacheDir, "cache-dir", "", "where downloaded sources and releases are cached (default: <user cache dir>/swdt)")
	_ = cmd.MarkFlagDirname("cache-dir")
	f.swap.add(cmd.Flags())
	f.download.add(cmd.Flags())
	return cmd
}

func runJoin(ctx context.Context, e *env, f joinFlags) error {
	files := config.PrivateKeyFile
	if !f.reset {
		files |= config.ProvisionerSources
	}
	res, err := e.loadConfig(files)
	if err != nil {
		return err
	}
	abort, stop := e.interrupts(e.ui.Warn, nil)
	defer stop()
	swap := f.swap.options()
	swap.Abort = abort
	opts := join.Options{Reset: f.reset, Swap: swap, Resolver: f.download.resolver(f.cacheDir, false), Observer: winsObserver{ui: e.ui},
		Reboot: func(ctx context.Context, spec *v1alpha1.Node) error { return joinReboot(ctx, e, spec) }}
	connect := func(ctx context.Context, spec *v1alpha1.Node, warn func(string)) (join.Node, func(), error) {
		n, err := e.connect(ctx, spec, warn)
		if err != nil {
			return nil, nil, err
		}
		return n, func() { n.Close() }, nil
	}
	results, err := join.Run(ctx, res.Nodes, connect, opts)
	if err != nil {
		return fmt.Errorf("%w (in %s)", err, res.Path)
	}
	if err := report.PrintJoin(e.ui, results); err != nil {
		return err
	}
	if err := fleet.Err(results, join.Failures); err != nil {
		return err
	}
	done := "joined"
	if f.reset {
		done = "reset"
	}
	e.ui.Success("%s %d node(s)", done, len(results))
	return nil
}
