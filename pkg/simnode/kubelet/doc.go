// Package kubelet plays kubelet.exe for a simulated node (a
// machine.Daemon): while a service process whose binary holds
// machine.MarkerKubelet lives, it talks to the real Kubernetes API server
// its kubeconfig names as kubelet.exe does (TLS bootstrap with a
// node-client CSR, the Node registered with its version, labels and
// taints, status posted NotReady for a missing network plugin, its Lease
// renewed), after validating its configuration as kubelet.exe does.
//
// Given a HostExec (Daemon.Exec), it also runs the HostProcess pods bound
// to its Node and serves exec into them, and port-forward to the node's
// loopback (which a HostProcess pod shares), on its port through the
// upstream CRI streaming server (pods.go); it runs no other pods and no
// container runtime. It must never touch the machine but through machine.Node's
// methods and HostExec.
package kubelet
