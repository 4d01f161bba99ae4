package app

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// pickNode loads the -c file and returns its node called name: a usage
// error listing the file's nodes when there is none.
func (e *env) pickNode(name string) (*v1alpha1.Node, error) {
	res, err := e.loadConfig()
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range res.Nodes {
		if res.Nodes[i].Name == name {
			return &res.Nodes[i], nil
		}
		names = append(names, res.Nodes[i].Name)
	}
	return nil, exitcode.WithCode(exitcode.Usage,
		fmt.Errorf("%s has no node %q; its nodes: %s", res.Path, name, strings.Join(names, ", ")))
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
