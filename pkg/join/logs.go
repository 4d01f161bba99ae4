package join

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/ops"
)

// Where the join's services log. A Windows service has no stderr, and
// the kubelet and kube-proxy refuse klog's --log-file since 1.26
// (KEP-2845): upstream's Windows nodes run them under kube-log-runner
// (cluster/gce/windows/k8s-node-setup.psm1: `kube-log-runner.exe
// -log-file=...\kubelet.log kubelet.exe --windows-service ...`), which
// every Kubernetes node release ships as kube-log-runner.exe. containerd
// has its own --log-file (`containerd --register-service --log-file`,
// the same script). swdt logs finds either flag in the service's command
// line.

// withLogRunner makes req run its program under kube-log-runner (runner,
// nil for none) with its output appended to logFile: the service's
// program becomes kube-log-runner, and the program with its arguments
// follow its -log-file.
func withLogRunner(req ops.ServiceRegisterRequest, runner *v1alpha1.ProvisionerSpec, logFile string) ops.ServiceRegisterRequest {
	if runner == nil {
		return req
	}
	req.Args = append([]string{"-log-file=" + logFile, req.Program}, req.Args...)
	req.Program = runner.Destination
	return req
}

// logs are the log files the join's services write: containerd's when a
// provisioner feeds it, the kubelet's and kube-proxy's when they run
// under kube-log-runner.
func (p *prepared) logs() []string {
	var out []string
	if p.containerd != nil {
		out = append(out, ops.JoinContainerdLog)
	}
	if p.logRunner != nil {
		out = append(out, ops.JoinKubeletLog)
		if p.kubeProxy != nil {
			out = append(out, ops.JoinKubeProxyLog)
		}
	}
	return out
}

// kubeletRegistered reports whether the node has the kubelet's service.
func (p *prepared) kubeletRegistered() bool {
	return slices.ContainsFunc(p.registered, func(s string) bool { return strings.EqualFold(s, serviceOf(p.kubelet)) })
}

// warnNoLogRunner warns, when the kubelet runs without kube-log-runner,
// that its log goes nowhere.
func (j *joiner) warnNoLogRunner(p *prepared) {
	if p.logRunner == nil {
		j.opts.Observer.Warn(fmt.Sprintf("node %s: the kubelet's log goes nowhere (a service has no console, and the kubelet takes no --log-file): "+
			"add a provisioner for kube-log-runner.exe with service: kubelet (sourceURL: release:kubernetes), as docs/join.md#logs shows", j.spec.Name))
	}
}

// kubeletLogHint says where to look when the kubelet did not register.
func (p *prepared) kubeletLogHint(node string) string {
	if p.logRunner == nil {
		return fmt.Sprintf("swdt logs %s kubelet shows its service's events; its own log goes nowhere without a kube-log-runner provisioner (docs/join.md#logs)", node)
	}
	return fmt.Sprintf("see swdt logs %s kubelet (%s and its service's events)", node, ops.JoinKubeletLog)
}
