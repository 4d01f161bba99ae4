package agent

import "strings"

// kube-log-runner (k8s.io/component-base/logs/kube-log-runner, in every
// Kubernetes node release as kube-log-runner.exe) runs a program as its
// child with the child's stdout and stderr appended to -log-file. The
// kubelet and kube-proxy take no --log-file since 1.26 (KEP-2845), and a
// Windows service has no stderr: upstream's Windows nodes
// (cluster/gce/windows/k8s-node-setup.psm1) register
// `kube-log-runner.exe -log-file=...\kubelet.log kubelet.exe
// --windows-service ...`. kube-log-runner is the service's process; the
// kubelet below it talks to the service control manager.

// logRunnerName is kube-log-runner's file name.
const logRunnerName = "kube-log-runner.exe"

// logRunnerValueFlags are kube-log-runner's flags that take a value; its
// others (also-stdout, redirect-stderr) are booleans.
var logRunnerValueFlags = []string{"log-file", "log-file-size", "log-file-age", "flush-interval"}

// logRunnerProgram is the program a kube-log-runner command line (argv,
// kube-log-runner's path first) runs: its first argument that is no
// flag, as Go's flag package parses them ("" when there is none).
func logRunnerProgram(argv []string) string {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			if i+1 < len(argv) {
				return argv[i+1]
			}
			return ""
		case len(a) < 2 || a[0] != '-':
			return a
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue && swapContains(logRunnerValueFlags, name) {
			i++ // the value is the next argument
		}
	}
	return ""
}
