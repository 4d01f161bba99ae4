// Package status reports, without changing anything, what a node runs: its
// OS and account, and for each provisioner the service's state and the
// binary in place, compared with the local build when there is one.
//
// It never prints and never sees SSH: it asks a Node and returns a Report.
package status

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/hashcache"
	"sigs.k8s.io/swdt/pkg/ops"
)

// Node is what status needs from a node; *node.Node implements it.
type Node interface {
	Facts(ctx context.Context) (ops.NodeFactsResponse, error)
	InspectProvision(ctx context.Context, targets []ops.ProvisionTarget) (ops.ProvisionInspectResponse, error)
}

// Target is one binary to report on.
type Target struct {
	// Name is the provisioner's name (or "wins").
	Name string
	// Service is the Windows service the binary feeds.
	Service string
	// Destination is the binary's Windows path.
	Destination string
	// Helper is a binary the service uses but does not run as its
	// program: what the service runs is not compared with Destination.
	Helper bool
	// WantSHA256 is the digest of the local build or of the spec's sha256;
	// empty when there is nothing to compare with.
	WantSHA256 string
	// NoWant says why WantSHA256 is empty (e.g. "no local build").
	NoWant string
}

// Comparison of the binary on the node with the wanted one: words
// without spaces, as every enum value of swdt's JSON.
const (
	InSync  = "in-sync"
	Differs = "differs"
	Missing = "missing"
	// Unfinished is a binary an interrupted swap left unverified:
	// whatever it holds, the next swdt kubernetes (or swdt wins)
	// finishes or rolls back that swap first.
	Unfinished = "unfinished-swap"
	// Swapping is a binary another run is swapping right now.
	Swapping = "being-swapped"
	// NoService is the status of a binary that feeds no service (a
	// provisioner with service None).
	NoService = "no-service"
	// RunsOther is a destination the service does not run: Binary's
	// ServiceRuns names what it runs.
	RunsOther = "runs-another-file"
	// NoLocalBuild is a local source that does not exist (yet).
	NoLocalBuild = "no-local-build"
	// NotCompared is a download without sha256: nothing to compare with.
	NotCompared = "not-compared"
	// NotRegistered is the status of a binary whose service the node
	// does not have.
	NotRegistered = "not-registered"
)

// Binary is what the node runs for one target.
type Binary struct {
	Name        string `json:"name"`
	Service     string `json:"service"`
	Destination string `json:"destination"`
	// Status is the service's status, NotRegistered or NoService.
	Status    string `json:"status"`
	StartType string `json:"startType,omitempty"`
	PID       int    `json:"pid,omitempty"`
	// Present is false when no file is at Destination.
	Present bool   `json:"present"`
	Size    int64  `json:"size"`
	Version string `json:"version,omitempty"`
	SHA256  string `json:"sha256,omitempty"`
	// Source compares the binary with the wanted one: in sync, differs,
	// missing, or why there is nothing to compare with.
	Source string `json:"source"`
	// ServiceRuns is the program the service runs, when it is known (for
	// a service wrapped by nssm, the program nssm starts).
	ServiceRuns string `json:"serviceRuns,omitempty"`
	// RunsVia says how the service runs its program: directly, through
	// nssm, or through nssm + PowerShell (a script nssm starts).
	RunsVia string `json:"runsVia,omitempty"`
	// Node is what the cluster says of the Node this kubelet reports,
	// on a node with spec.kubernetes.join (nil otherwise); NodeError says
	// why the cluster could not be read.
	Node      *cluster.NodeState `json:"clusterNode,omitempty"`
	NodeError string             `json:"clusterNodeError,omitempty"`
}

// Report is one node's status.
type Report struct {
	Node     ops.NodeFactsResponse `json:"node"`
	Binaries []Binary              `json:"binaries"`
	// UnfinishedSwap says, when the node has a swap journal, whose swap
	// it is and whether it is running or was interrupted.
	UnfinishedSwap string `json:"unfinishedSwap,omitempty"`
	// UnsafeFolders are the binaries' folders (or folders above them)
	// that an ordinary account owns, or that every user shares, each with
	// what to do: that account may replace what the services run.
	UnsafeFolders []string `json:"unsafeFolders,omitempty"`
}

// OutOfSync counts binaries that are missing or differ from the wanted one.
func (r *Report) OutOfSync() int {
	n := 0
	for _, b := range r.Binaries {
		if b.Source == Differs || b.Source == Missing || b.Source == Unfinished || b.Source == RunsOther {
			n++
		}
	}
	return n
}

// Gather asks the node in two read-only ops. hashes, when not nil, spares
// re-reading binaries whose size and time are unchanged since swdt last
// saw them (and learns the ones it had to read).
func Gather(ctx context.Context, n Node, targets []Target, hashes hashcache.Cache) (*Report, error) {
	facts, err := n.Facts(ctx)
	if err != nil {
		return nil, fmt.Errorf("node facts: %w", err)
	}
	report := &Report{Node: facts, Binaries: []Binary{}}
	if len(targets) == 0 {
		return report, nil
	}
	req := make([]ops.ProvisionTarget, len(targets))
	for i, t := range targets {
		req[i] = ops.ProvisionTarget{Service: t.Service, Destination: t.Destination}
		if hashes != nil {
			req[i].Known = hashes.Known(t.Destination)
		}
	}
	inspect, err := n.InspectProvision(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("inspect: %w", err)
	}
	if len(inspect.Files) != len(targets) {
		return nil, fmt.Errorf("inspect returned %d files for %d binaries", len(inspect.Files), len(targets))
	}
	report.UnsafeFolders = inspect.UnsafeFolders
	services := map[string]ops.ServiceInfo{}
	for _, s := range inspect.Services {
		services[strings.ToLower(s.Name)] = s
	}
	journaled := map[string]bool{}
	unfinished := ""
	if u := inspect.Unfinished; u != nil {
		for _, it := range u.Journal.Request.Items {
			journaled[strings.ToLower(it.Destination)] = true
		}
		unfinished = Unfinished
		report.UnfinishedSwap = fmt.Sprintf("a swap started %s by %s was interrupted; run swdt kubernetes (or swdt wins) to finish or roll it back", u.Journal.Started, journalOwner(u.Journal.Owner))
		if u.InProgress {
			unfinished = Swapping
			report.UnfinishedSwap = fmt.Sprintf("a swap by %s is in progress, started %s", journalOwner(u.Journal.Owner), u.Journal.Started)
		}
	}
	for i, t := range targets {
		f := inspect.Files[i]
		if hashes != nil && !f.Cached {
			hashes.Remember(t.Destination, f)
		}
		b := Binary{Name: t.Name, Service: t.Service, Destination: t.Destination, Status: NotRegistered,
			Present: f.Exists, Size: f.Size, Version: f.Version, SHA256: f.SHA256}
		s := services[strings.ToLower(t.Service)]
		if t.Service == "" {
			b.Status = NoService
		}
		if s.Exists {
			b.Status, b.StartType, b.PID, b.ServiceRuns = s.Status, s.StartType, s.PID, s.Executable
			b.RunsVia = "directly"
			if s.Via != "" {
				b.RunsVia = "through " + s.Via
			}
		}
		switch {
		case journaled[strings.ToLower(t.Destination)]:
			b.Source = unfinished
		case !t.Helper && !s.Runs(t.Destination):
			b.Source = RunsOther
		case t.WantSHA256 == "":
			b.Source = t.NoWant
		case !f.Exists:
			b.Source = Missing
		case strings.EqualFold(f.SHA256, t.WantSHA256):
			b.Source = InSync
		default:
			b.Source = Differs
		}
		report.Binaries = append(report.Binaries, b)
	}
	return report, nil
}

// journalOwner names the run of a journal.
func journalOwner(o ops.LockOwner) string {
	if o.RunID == "" {
		return "swdt"
	}
	return o.String()
}
