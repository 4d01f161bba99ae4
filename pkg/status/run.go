package status

import (
	"context"
	"strings"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hashcache"
	"sigs.k8s.io/swdt/pkg/source"
	"sigs.k8s.io/swdt/pkg/target"
)

// Options tune Run.
type Options struct {
	// CacheDir is swdt's cache ("" for the default): the local builds'
	// and the nodes' hash caches.
	CacheDir string
	// Warn receives what the user must see about a connection.
	Warn func(msg string)
}

// Run reads every node in parallel and changes nothing: swdt status. Each
// node's binaries are its provisioners and, with spec.wins, wins.exe.
func Run(ctx context.Context, nodes []v1alpha1.Node, connect fleet.Connector, opts Options) []fleet.Result[*Report] {
	resolver := &source.Resolver{CacheDir: opts.CacheDir}
	return fleet.Run(ctx, nodes, 0, func(ctx context.Context, spec *v1alpha1.Node) (*Report, error) {
		targets := Targets(ctx, resolver, spec)
		n, err := connect(ctx, spec, func(msg string) { opts.Warn("node " + spec.Name + ": " + msg) })
		if err != nil {
			return nil, err
		}
		defer n.Close()
		hashes := hashcache.ForNode(opts.CacheDir, spec)
		if hashes != nil {
			defer func() { _ = hashes.Save() }() // without it the next run reads the binaries again
		}
		report, err := Gather(ctx, n, targets, hashes)
		if err == nil {
			ClusterNode(ctx, spec, report)
		}
		return report, err
	})
}

// clusterReadLimit bounds reading the Node from the cluster.
const clusterReadLimit = 15 * time.Second

// ClusterNode adds, on a node with spec.kubernetes.join, what the cluster
// says of its Node (Ready condition, the conditions that are not
// healthy, which say why it is NotReady, kubeletVersion) to the kubelet's
// binary in report; a cluster that cannot be read is reported there, not
// as the node's failure.
func ClusterNode(ctx context.Context, spec *v1alpha1.Node, report *Report) {
	js := spec.Spec.Kubernetes.Join
	kubelet := v1alpha1.JoinKubelet(&spec.Spec.Kubernetes)
	if js == nil || kubelet == nil {
		return
	}
	var b *Binary
	for i := range report.Binaries {
		if report.Binaries[i].Name == kubelet.Name {
			b = &report.Binaries[i]
		}
	}
	if b == nil {
		return
	}
	name := js.NodeName
	if name == "" {
		name = strings.ToLower(report.Node.Hostname)
	}
	c, err := cluster.Connect(js.Kubeconfig, js.Context)
	if err != nil {
		b.NodeError = err.Error()
		return
	}
	cctx, cancel := context.WithTimeout(ctx, clusterReadLimit)
	defer cancel()
	st, err := c.Node(cctx, name)
	if err != nil {
		b.NodeError = err.Error()
		return
	}
	b.Node = &st
}

// Targets lists the node's provisioners and wins with the digest each
// binary should have: the local build's, or the spec's sha256.
func Targets(ctx context.Context, resolver *source.Resolver, spec *v1alpha1.Node) []Target {
	bins := target.Provisioners(spec)
	if w := spec.Spec.Wins; w != nil {
		bins = append(bins, target.Wins(w))
	}
	targets := make([]Target, 0, len(bins))
	for _, b := range bins {
		t := Target{Name: b.Name, Service: b.Service, Destination: b.Destination, Helper: b.Helper}
		switch _, local := b.LocalPath(); {
		case local:
			src := b.Source()
			src.SHA256 = ""
			if f, err := resolver.ResolveBinary(ctx, src, nil); err == nil {
				t.WantSHA256 = f.SHA256
			} else {
				t.NoWant = NoLocalBuild
			}
		case b.SHA256 != "" && !b.Source().Archived():
			// An archive's sha256 is the archive's, not the binary's.
			t.WantSHA256 = strings.ToLower(b.SHA256)
		default:
			t.NoWant = NotCompared
		}
		targets = append(targets, t)
	}
	return targets
}
