package simos

import (
	"sync/atomic"

	"sigs.k8s.io/swdt/pkg/simnode/machine"
)

// Host is what the machine's Windows layer keeps for as long as the
// simnode process runs and never saves (a restart is a reboot): the named
// mutexes and the agents that run.
type Host struct {
	mutexes mutexTable
	agents  agentTable
	// holdsReached counts the AgentHold faults agents reached.
	holdsReached atomic.Int64
}

// Node is the machine as one account sees it (every method of
// machine.Node), with its Windows layer.
type Node struct {
	*machine.Node
	h *Host
}

// Node is n with the host's Windows layer.
func (h *Host) Node(n *machine.Node) *Node { return &Node{Node: n, h: h} }
