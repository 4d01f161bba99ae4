package app

import (
	"context"
	"slices"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/daytwo"
)

// completeNode completes a command's first argument with the node names of
// the -c file.
func (e *env) completeNode(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	path, _ := cmd.Flags().GetString("config")
	res, err := config.Load(path)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, len(res.Nodes))
	for i, n := range res.Nodes {
		names[i] = n.Name
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeClusterNode completes --cluster-node with the Windows Nodes of
// the cluster the -c rollout file names (nothing when it cannot be read
// or the cluster does not answer within completionTimeout).
func completeClusterNode(cmd *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
	path, _ := cmd.Flags().GetString("config")
	res, err := config.Load(path)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	_, c, _, err := rolloutCluster(res)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	names, err := c.NodeNames(ctx, corev1.LabelOSStable+"=windows")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeNodeThenServices completes the [NODE] [SERVICE...] of swdt logs
// and swdt restart: the node names of the -c file, and the services its
// node file gives the node (the file's only node's, or --node's, before
// a node is named), as pickNode finds the node.
func (e *env) completeNodeThenServices(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	path, _ := cmd.Flags().GetString("config")
	res, err := config.Load(path)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	var spec *v1alpha1.Node
	for i, n := range res.Nodes {
		switch {
		case len(args) > 0 && n.Name == args[0]:
			spec = &res.Nodes[i]
		case len(args) == 0:
			out = append(out, n.Name)
		}
	}
	if spec == nil {
		nodes, _ := cmd.Flags().GetStringSlice("node")
		// Cobra parses a completion's flags twice, and each parse of a
		// slice flag appends to it.
		nodes = slices.Compact(slices.Sorted(slices.Values(nodes)))
		switch {
		case len(nodes) == 1:
			if i := slices.IndexFunc(res.Nodes, func(n v1alpha1.Node) bool { return n.Name == nodes[0] }); i >= 0 {
				spec = &res.Nodes[i]
			}
		case len(res.Nodes) == 1:
			spec = &res.Nodes[0]
		}
	}
	if spec != nil {
		for _, svc := range daytwo.NodeServices(spec) {
			if !slices.Contains(args, svc) {
				out = append(out, svc)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
