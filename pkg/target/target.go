// Package target decides what each binary of a node file becomes: the
// provisioners of spec.kubernetes and wins.exe of spec.wins, with the
// service each feeds, its health checks and whether its source is a local
// build. Every workflow that reads those binaries (pkg/provision,
// pkg/wins, pkg/status) asks this package, so that they agree.
package target

import (
	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/source"
)

// WinsName is the name wins.exe goes by in plans, reports and status.
const WinsName = "wins"

// Binary is one binary of the node file.
type Binary struct {
	// Name is the provisioner's name ("wins" for wins.exe).
	Name string
	// Service is the Windows service the binary feeds.
	Service string
	// Destination is the absolute Windows path of the binary.
	Destination string
	// Helper is a binary its service uses but does not run as its
	// program (containerd's shim): what the service runs is not compared
	// with Destination.
	Helper bool
	// SourceURL is where the binary comes from, as written (resolved
	// local paths).
	SourceURL string
	// SHA256 is the expected digest of the source ("" when not given).
	SHA256 string
	// Version is the provisioner's version: which release a
	// release:KIND source takes the binary from.
	Version string
	// Overwrite replaces the destination even when it holds the same
	// bytes.
	Overwrite bool
	// HealthChecks run after the service starts.
	HealthChecks []ops.HealthCheckSpec
	// RegisterReplace lets Register take flags and dependencies away from
	// an existing service (register.replace).
	RegisterReplace bool
	// Register, when set, is how the service is registered when the node
	// does not have it yet (spec.kubernetes.provisioners[].register).
	Register *ops.ServiceRegisterRequest
}

// LocalPath is the local file the source names, when it is a local build
// (a path or a file:// URL): the file --watch watches and status hashes.
func (b Binary) LocalPath() (string, bool) { return source.LocalPath(b.SourceURL) }

// SourceKey identifies the source: binaries with equal keys share one
// download.
func (b Binary) SourceKey() string { return b.Source().Key() }

// Source is where the binary comes from, as pkg/source resolves it: a
// release or an archive gives the binary named as the destination's file.
func (b Binary) Source() source.Binary {
	name := winpath.Base(b.Destination)
	return source.Binary{Ref: b.SourceURL, SHA256: b.SHA256, Version: b.Version, Name: name}
}

// Provisioner is what one provisioner becomes.
func Provisioner(p v1alpha1.ProvisionerSpec) Binary {
	b := Binary{
		Name:         p.Name,
		Service:      p.ServiceName(),
		Destination:  p.Destination,
		Helper:       p.Helper(),
		SourceURL:    p.SourceURL,
		SHA256:       p.SHA256,
		Version:      p.Version,
		Overwrite:    p.Overwrite,
		HealthChecks: HealthChecks(p.HealthChecks),
	}
	if r := p.Register; r != nil {
		b.Register = &ops.ServiceRegisterRequest{
			Name:        b.Service,
			Program:     p.Destination,
			Args:        append([]string(nil), r.Args...),
			DisplayName: r.DisplayName,
			Description: r.Description,
			StartType:   r.StartType,
			DependsOn:   append([]string(nil), r.DependsOn...),
		}
		b.RegisterReplace = r.Replace
	}
	return b
}

// Provisioners are what a node's provisioners become, in file order.
func Provisioners(spec *v1alpha1.Node) []Binary {
	out := make([]Binary, 0, len(spec.Spec.Kubernetes.Provisioners))
	for _, p := range spec.Spec.Kubernetes.Provisioners {
		out = append(out, Provisioner(p))
	}
	return out
}

// HealthChecks maps the node file's health checks to the agent's, field
// by field (a test fails when a field is added to one and not the other).
func HealthChecks(in []v1alpha1.HealthCheck) []ops.HealthCheckSpec {
	out := make([]ops.HealthCheckSpec, len(in))
	for i, c := range in {
		out[i] = ops.HealthCheckSpec{NamedPipe: c.NamedPipe, TCPPort: c.TCPPort, Command: append([]string(nil), c.Command...)}
	}
	return out
}

// WinsDestination is where spec puts wins.exe; a nil spec means the
// default (C:\etc\rancher\wins\wins.exe), which verify and uninstall use
// for a node without spec.wins.
func WinsDestination(spec *v1alpha1.WinsSpec) string {
	if spec != nil && spec.Destination != "" {
		return spec.Destination
	}
	return v1alpha1.DefaultWinsDestination
}

// Wins is what wins.exe of spec becomes. Its health checks are the
// bridge's: both pipes exist and a get-version round trip through the
// pipe works, so that a wins that breaks the bridge is rolled back like
// any provisioner. It registers itself (pkg/wins), so Register is nil.
func Wins(spec *v1alpha1.WinsSpec) Binary {
	dest := WinsDestination(spec)
	return Binary{
		Name:        WinsName,
		Service:     ops.WinsService,
		Destination: dest,
		SourceURL:   spec.SourceURL,
		SHA256:      spec.SHA256,
		Version:     spec.Version,
		HealthChecks: []ops.HealthCheckSpec{
			{NamedPipe: ops.WinsPipe},
			{NamedPipe: ops.WinsProxyPipe},
			{Command: []string{dest, "cli", "hst", "get-version"}},
		},
	}
}
