package app

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// pickNode loads the -c file, shows the warnings about its node called
// name and returns it: a usage error listing the file's nodes when there
// is none. Of the local files, only the private key is checked: the
// commands that pick one node (exec, logs) read no other.
func (e *env) pickNode(name string) (*v1alpha1.Node, error) {
	res, err := config.LoadWith(e.configPath, config.Options{Files: config.PrivateKeyFile})
	if err != nil {
		return nil, err
	}
	for _, n := range res.Nodes {
		if n.Name == name {
			res.Nodes = []v1alpha1.Node{n}
			e.showWarnings(res)
			return &res.Nodes[0], nil
		}
	}
	return nil, unknownNode(res, name)
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
