package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// pickNode loads the -c file and returns the node a one-node verb
// (ssh, exec, logs, cp, port-forward, restart, reboot) works on, and the
// arguments after its name (all of args when the node was not named
// there). The node is args[0] when it names a node of the file, or
// whatever it is when named is set (swdt exec's NODE --, swdt cp's
// NODE:PATH: a usage error when the file has no such node); else the one
// node --node names; else the file's only node. It shows the warnings
// about that node only. Of the local files, only the private key is
// checked: a one-node verb reads no other.
func (e *env) pickNode(verb string, args []string, named bool) (*v1alpha1.Node, []string, error) {
	if e.clusterNode != "" {
		return e.pickClusterNode(verb, args, named, 0)
	}
	res, err := config.LoadWith(e.configPath, config.Options{Files: config.PrivateKeyFile})
	if err != nil {
		return nil, nil, err
	}
	name, rest := "", args
	if len(args) > 0 && (named || slices.ContainsFunc(res.Nodes, func(n v1alpha1.Node) bool { return n.Name == args[0] })) {
		name, rest = args[0], args[1:]
	}
	spec, err := e.defaultNode(res, verb, name, args)
	if err != nil {
		return nil, nil, err
	}
	return spec, rest, nil
}

// addClusterNodeFlag adds --cluster-node to a one-node verb that works
// through the Kubernetes API.
func (e *env) addClusterNodeFlag(cmd *cobra.Command) {
	cmd.Flags().StringVar(&e.clusterNode, "cluster-node", "", "work on this Node of the -c rollout file's cluster, reached through the Kubernetes API (its HostProcess pod), not over SSH")
	_ = cmd.RegisterFlagCompletionFunc("cluster-node", completeClusterNode)
}

// pickClusterNode is pickNode for --cluster-node: the rollout file's node,
// named after the cluster's Node, which the connection then reaches
// through the API (dial). When named, the first argument is a node name
// by the verb's syntax (cp's NODE:PATH) and must be the Node's; every
// other argument is the verb's. files are the local files the verb reads.
func (e *env) pickClusterNode(verb string, args []string, named bool, files config.FileKind) (*v1alpha1.Node, []string, error) {
	if named && len(args) > 0 {
		if args[0] != e.clusterNode {
			return nil, nil, exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt %s: the node is %s (--cluster-node), not %s", verb, e.clusterNode, args[0]))
		}
		args = args[1:]
	}
	res, err := e.clusterNodeConfig(verb, files)
	if err != nil {
		return nil, nil, err
	}
	return &res.Nodes[0], args, nil
}

// clusterNodeConfig is the -c file as --cluster-node sees it: only the
// rollout file's node, named after the cluster's Node (a verb that works
// on every node of the file then works on that one), whose connection
// dial makes through the Kubernetes API.
func (e *env) clusterNodeConfig(verb string, files config.FileKind) (*config.Result, error) {
	if len(e.nodes) > 0 {
		return nil, exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt %s: --cluster-node names the node; --node does not go with it", verb))
	}
	res, err := config.LoadWith(e.configPath, config.Options{Files: files})
	if err != nil {
		return nil, err
	}
	spec, _, kopts, err := rolloutCluster(res)
	if err != nil {
		return nil, err
	}
	e.showWarnings(res)
	one := *spec
	one.Name = e.clusterNode
	e.kube = &kopts
	res.Nodes = []v1alpha1.Node{one}
	return res, nil
}

// defaultNode picks the node called name, or when name is "" the one of
// --node, or the file's only one; args are the verb's arguments, for the
// suggestion when the first one looks like a mistyped node name.
func (e *env) defaultNode(res *config.Result, verb, name string, args []string) (*v1alpha1.Node, error) {
	switch {
	case name != "" && len(e.nodes) > 0 && !(len(e.nodes) == 1 && e.nodes[0] == name):
		return nil, exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt %s works on one node: it was named %s and --node %s", verb, name, strings.Join(e.nodes, ",")))
	case name == "" && len(e.nodes) > 1:
		return nil, exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt %s works on one node, not --node %s", verb, strings.Join(e.nodes, ",")))
	case name == "" && len(e.nodes) == 1:
		name = e.nodes[0]
	case name == "" && len(res.Nodes) == 1:
		name = res.Nodes[0].Name
	case name == "":
		if len(args) > 0 && config.Closest(args[0], nodeNames(res)) != "" {
			return nil, unknownNode(res, args[0])
		}
		return nil, exitcode.WithCode(exitcode.Usage, fmt.Errorf("swdt %s needs a node: %s has %d (%s); name one first, or use --node",
			verb, res.Path, len(res.Nodes), strings.Join(nodeNames(res), ", ")))
	}
	i := slices.IndexFunc(res.Nodes, func(n v1alpha1.Node) bool { return n.Name == name })
	if i < 0 {
		return nil, unknownNode(res, name)
	}
	res.Nodes = []v1alpha1.Node{res.Nodes[i]}
	e.showWarnings(res)
	return &res.Nodes[0], nil
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

func nodeNames(res *config.Result) []string {
	names := make([]string, len(res.Nodes))
	for i, n := range res.Nodes {
		names[i] = n.Name
	}
	return names
}

// unknownArgs is the error for arguments a one-node verb does not take.
func unknownArgs(verb string, args []string) error {
	return fmt.Errorf("swdt %s takes a node name only, not %s (see 'swdt %s --help')", verb, strings.Join(args, " "), verb)
}
