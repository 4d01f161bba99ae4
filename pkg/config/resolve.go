package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
)

// pathProblem is a local path that could not be resolved.
type pathProblem struct {
	field   string
	message string
}

// resolvePaths makes every local path of a node absolute: `~` is the user's
// home directory and relative paths are relative to dir, the config file's
// directory. URLs (file://, http(s)://) are left alone.
func resolvePaths(n *v1alpha1.Node, dir string) []pathProblem {
	var problems []pathProblem
	resolve := func(p *string, fieldPath string) {
		abs, err := resolvePath(*p, dir)
		if err != nil {
			problems = append(problems, pathProblem{field: fieldPath, message: err.Error()})
			return
		}
		*p = abs
	}
	c := &n.Spec.Credentials
	resolve(&c.PrivateKey, "spec.credentials.privateKey")
	resolve(&c.KnownHostsFile, "spec.credentials.knownHostsFile")
	for i := range n.Spec.Setup.AuthorizedKeys {
		resolve(&n.Spec.Setup.AuthorizedKeys[i], fmt.Sprintf("spec.setup.authorizedKeys[%d]", i))
	}
	for i := range n.Spec.Kubernetes.Provisioners {
		if p := &n.Spec.Kubernetes.Provisioners[i]; v1alpha1.IsLocalPathSource(p.SourceURL) {
			resolve(&p.SourceURL, fmt.Sprintf("spec.kubernetes.provisioners[%d].sourceURL", i))
		}
	}
	if j := n.Spec.Kubernetes.Join; j != nil {
		resolve(&j.Kubeconfig, "spec.kubernetes.join.kubeconfig")
		resolve(&j.ContainerdConfig, "spec.kubernetes.join.containerdConfig")
	}
	if r := n.Spec.Kubernetes.Rollout; r != nil {
		resolve(&r.Kubeconfig, "spec.kubernetes.rollout.kubeconfig")
	}
	if w := n.Spec.Wins; w != nil && v1alpha1.IsLocalPathSource(w.SourceURL) {
		resolve(&w.SourceURL, "spec.wins.sourceURL")
	}
	return problems
}

// resolvePath resolves one local path; an empty path stays empty.
func resolvePath(p, dir string) (string, error) {
	switch {
	case p == "":
		return "", nil
	case p == "~" || strings.HasPrefix(p, "~/") || strings.HasPrefix(p, `~\`):
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cannot expand ~: %w", err)
		}
		return filepath.Join(home, p[1:]), nil
	case strings.HasPrefix(p, "~"):
		return "", fmt.Errorf("%q: only ~ (your own home directory) is supported, not ~user", p)
	case filepath.IsAbs(p):
		return filepath.Clean(p), nil
	default:
		return filepath.Join(dir, p), nil
	}
}
