// Package daytwo is the workflow of the commands that look at one node
// without changing what swdt manages on it: swdt exec (Exec) runs one
// program and streams its output, swdt logs (Logs) reads the logs of the
// node's services, once or again and again.
//
// It reaches the node through a fleet.Connector and never prints: output
// goes to the writers and callbacks its callers pass.
package daytwo
