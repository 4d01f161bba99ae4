// Package daytwo is the workflow of the commands of a day on one node, next
// to the swaps: swdt exec (Exec) runs one program and streams its output,
// swdt logs (Logs) reads the logs of the node's services, once or again and
// again; swdt ssh (Shell), cp (Copy) and port-forward (PortForward) use the
// node's SSH connection itself; swdt restart (Restart) and reboot (Reboot)
// restart services or the machine through the agent and wait for them.
//
// It reaches the node through a fleet.Connector and never prints: output
// goes to the writers and callbacks its callers pass.
package daytwo
