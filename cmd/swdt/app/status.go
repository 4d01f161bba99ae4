package app

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/status"
	"sigs.k8s.io/swdt/pkg/ui"
)

// statusNodeJSON is one node in `swdt status -o json` output.
type statusNodeJSON struct {
	Name string `json:"name"`
	// Result is unchanged (status changes nothing), or failed when the
	// node could not be read.
	Result string `json:"result"`
	*status.Report
	// Error says why the node could not be read.
	Error string `json:"error,omitempty"`
}

// statusJSON is `swdt status -o json` output.
type statusJSON struct {
	docMeta
	Nodes []statusNodeJSON `json:"nodes"`
}

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
	_ = cmd.MarkFlagDirname("cache-dir")
	return cmd
}

func runStatus(ctx context.Context, e *env, cacheDir string) error {
	res, err := e.loadConfig(config.PrivateKeyFile | config.ProvisionerSources | config.WinsSource)
	if err != nil {
		return err
	}
	results := status.Run(ctx, res.Nodes, e.connect, status.Options{CacheDir: cacheDir, Warn: func(msg string) { e.ui.Warn("%s", msg) }})
	if err := printStatus(e.ui, results); err != nil {
		return err
	}
	return fleet.Err(results, nil)
}

// printStatus shows each node's facts and a table of its binaries, or JSON.
func printStatus(u *ui.UI, results []fleet.Result[*status.Report]) error {
	if u.Format() == ui.FormatJSON {
		doc := statusJSON{docMeta: meta("StatusReport"), Nodes: []statusNodeJSON{}}
		for _, r := range results {
			nj := statusNodeJSON{Name: r.Node, Result: resultUnchanged, Report: r.Value}
			if r.Err != nil {
				nj.Result, nj.Error = resultFailed, r.Err.Error()
			}
			doc.Nodes = append(doc.Nodes, nj)
		}
		return u.JSON(doc)
	}
	var rows [][]string
	for _, r := range results {
		if r.Err != nil {
			rows = append(rows, []string{r.Node, "-", "-", "-", "-", "-", "unreachable: see the error below"})
			continue
		}
		f := r.Value.Node
		admin := "administrator"
		if !f.IsAdmin {
			admin = "not an administrator"
		}
		u.Step(r.Node, "%s (%s %s, build %s.%d) as %s, %s", f.Hostname, f.ProductName, f.DisplayVersion, f.CurrentBuild, f.UBR, f.Username, admin)
		for _, f := range r.Value.UnsafeFolders {
			u.Warn("node %s: %s", r.Node, f)
		}
		if r.Value.UnfinishedSwap != "" {
			u.Warn("node %s: %s", r.Node, r.Value.UnfinishedSwap)
		}
		for _, b := range r.Value.Binaries {
			pid := "-"
			if b.PID > 0 {
				pid = strconv.Itoa(b.PID)
			}
			rows = append(rows, []string{r.Node, b.Name, statusText(b) + clusterText(b), pid, orDash(b.Version), shortSHA(b), b.Source})
			if b.NodeError != "" {
				u.Warn("node %s: the cluster could not be read: %s", r.Node, b.NodeError)
			}
			if why := nodeWhy(b.Node); why != "" {
				u.Warn("node %s: %s", r.Node, why)
			}
			if b.Source == status.RunsOther {
				u.Warn("node %s: service %s runs %s, not the destination %s", r.Node, b.Service, b.ServiceRuns, b.Destination)
			}
		}
	}
	return u.Table([]string{"NODE", "NAME", "SERVICE", "PID", "VERSION", "SHA256", "VS SOURCE"}, rows)
}

func statusText(b status.Binary) string {
	if b.StartType == "" {
		return b.Status
	}
	if b.RunsVia != "" && b.RunsVia != "directly" {
		return fmt.Sprintf("%s (%s, %s)", b.Status, b.StartType, b.RunsVia)
	}
	return fmt.Sprintf("%s (%s)", b.Status, b.StartType)
}

// clusterText is what the cluster says of a kubelet's Node, to show
// beside its service's state: "; Node NotReady, v1.37.2".
func clusterText(b status.Binary) string {
	switch {
	case b.NodeError != "":
		return "; Node unread"
	case b.Node == nil:
		return ""
	case !b.Node.Registered:
		return "; Node " + b.Node.Name + " not registered"
	case b.Node.Ready == corev1.ConditionTrue:
		return "; Node Ready, " + b.Node.KubeletVersion
	}
	return "; Node NotReady, " + b.Node.KubeletVersion
}

func shortSHA(b status.Binary) string {
	if !b.Present {
		return "no file"
	}
	return b.SHA256[:min(12, len(b.SHA256))]
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
