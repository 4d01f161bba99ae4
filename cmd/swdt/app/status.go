package app

import (
	"context"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/status"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

func newStatusCommand(e *env) *cobra.Command {
	var cacheDir string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show what each node runs, next to what you built",
		Long: `Read every node of the -c file, in parallel, and change nothing: its OS,
build and account, and for each provisioner (and wins, when spec.wins is
set) the service's status, start type and PID, and the binary in place:
size, version and SHA-256, compared with the local build (or the spec's
sha256 for a download):

  in-sync          the node runs exactly your build
  differs          swdt kubernetes (or swdt wins) would replace it
  missing          there is no binary at the destination yet
  no-local-build   the local sourceURL does not exist (yet)
  not-compared     a download without sha256: nothing to compare with
  unfinished-swap  an interrupted swap left it unverified; the next
                   swdt kubernetes (or swdt wins) finishes or rolls it back
  being-swapped    another run is swapping it now
  runs-another-file  the service runs another file than the destination

On a node with spec.kubernetes.join the kubelet's service state is
followed by what the cluster says of its Node: Ready or NotReady, and the
kubeletVersion it reports; a warning says why a Node is NotReady (each
condition that is not in its healthy state, with its reason and message)
(-o json: clusterNode, its conditions).

Exit codes: 0 every node was read, 1 no node could be read, 2 usage or
config error, 3 some nodes could not be read.`,
		Example: "  swdt status -c node.yaml\n  swdt status -c node.yaml -o json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStatus(cmd.Context(), e, cacheDir)
		},
	}
	cmd.Flags().StringVar(&cacheDir, "cache-dir", "", "swdt's cache (default: <user cache dir>/swdt)")
	e.addClusterNodeFlag(cmd)
	_ = cmd.MarkFlagDirname("cache-dir")
	return cmd
}

func runStatus(ctx context.Context, e *env, cacheDir string) error {
	var res *config.Result
	var err error
	if e.clusterNode != "" {
		res, err = e.clusterNodeConfig("status", config.ProvisionerSources|config.WinsSource)
	} else {
		res, err = e.loadConfig(config.PrivateKeyFile | config.ProvisionerSources | config.WinsSource)
	}
	if err != nil {
		return err
	}
	results := status.Run(ctx, res.Nodes, e.connect, status.Options{CacheDir: cacheDir, Warn: func(msg string) { e.ui.Warn("%s", msg) }})
	if err := report.PrintStatus(e.ui, results); err != nil {
		return err
	}
	return fleet.Err(results, nil)
}
