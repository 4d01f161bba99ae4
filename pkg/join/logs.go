package join

import (
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
