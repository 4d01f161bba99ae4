package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// pickNode loads the -c file, shows the warnings about its node called
// name and returns it: a usage error listing the file's nodes when there
// is none. An empty name is the node --node names, else the file's only
// node. Of the local files, only the private key is checked: the
// commands that pick one node (exec, logs) read no other.
func (e *env) pickNode(name string) (*v1alpha1.Node, error) {
	var args []string
	if name != "" {
		args = []string{name}
	}
	n, _, err := e.pickNodeArgs(args, true)
	return n, err
}

// pickNodeArgs picks the one node a command acts on from its arguments:
// args[0] when it names a node of the -c file (or when named is set),
// else the node --node names, else the file's only node. It returns the
// node and the arguments after the node's name, if it was given.
func (e *env) pickNodeArgs(args []string, named bool) (*v1alpha1.Node, []string, error) {
	res, err := config.LoadWith(e.configPath, config.Options{Files: config.PrivateKeyFile})
	if err != nil {
		return nil, nil, err
	}
	find := func(name string) int {
		return slices.IndexFunc(res.Nodes, func(n v1alpha1.Node) bool { return n.Name == name })
	}
	i, rest := -1, args
	switch {
	case len(args) > 0 && (named || find(args[0]) >= 0):
		if i = find(args[0]); i < 0 {
			return nil, nil, unknownNode(res, args[0])
		}
		rest = args[1:]
		if len(e.nodes) > 0 && (len(e.nodes) > 1 || e.nodes[0] != args[0]) {
			return nil, nil, exitcode.WithCode(exitcode.Usage, fmt.Errorf("node %s and --node %s disagree: give one of them", args[0], strings.Join(e.nodes, ",")))
		}
	case len(e.nodes) > 1:
		return nil, nil, exitcode.WithCode(exitcode.Usage, fmt.Errorf("this command acts on one node, and --node names %d: %s", len(e.nodes), strings.Join(e.nodes, ", ")))
	case len(e.nodes) == 1:
		if i = find(e.nodes[0]); i < 0 {
			return nil, nil, unknownNode(res, e.nodes[0])
		}
	case len(res.Nodes) == 1:
		i = 0
	case len(args) > 0:
		return nil, nil, unknownNode(res, args[0])
	default:
		var names []string
		for _, n := range res.Nodes {
			names = append(names, n.Name)
		}
		return nil, nil, exitcode.WithCode(exitcode.Usage, fmt.Errorf("%s has %d nodes: name one (first argument, or --node): %s", res.Path, len(res.Nodes), strings.Join(names, ", ")))
	}
	res.Nodes = []v1alpha1.Node{res.Nodes[i]}
	e.showWarnings(res)
	return &res.Nodes[0], rest, nil
}

// unknownNode is the usage error for a node name the file does not have,
// with the closest name when one is near and the names it has.
func unknownNode(res *config.Result, name string) error {
	var names []string
	for _, n := range res.Nodes {
		names = append(names, n.Name)
	}
	msg := fmt.Sprintf("%s has no node %q", res.Path, name)
	if s := config.Closest(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return exitcode.WithCode(exitcode.Usage, fmt.Errorf("%s; its nodes: %s", msg, strings.Join(names, ", ")))
}

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

// completeNodeThenService completes swdt logs's [NODE] [SERVICE...]: the
// node names of the -c file, and the services its node file gives the
// node (the file's only node's, or --node's, before a node is named).
func (e *env) completeNodeThenService(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
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
