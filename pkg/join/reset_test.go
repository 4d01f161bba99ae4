package join

import (
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
)

// What --reset could not do is said once per reason: the files a
// process still runs, and what it left in the cluster.
func TestResetError(t *testing.T) {
	const gone = "not deleted: kubeconfig k has no context \"kind-dev\""
	tests := []struct {
		name string
		rep  Report
		want string
	}{
		{name: "everything done", rep: Report{Removed: []string{"service kubelet"}}},
		{name: "the cluster is gone", rep: Report{LeftInCluster: unreachable("win-01", "https://10.0.0.1:6443", "", gone)},
			want: "the node was reset, but this was left in the cluster: Node win-01 (at https://10.0.0.1:6443): " + gone +
				"; kube-proxy's token Secret kube-system/swdt-kube-proxy-win-01, if any, swdt's bootstrap tokens for win-01, if any: " + gone +
				". Run swdt join --reset again once the cluster answers, or ignore it if the cluster is gone for good"},
		{name: "never joined, cluster unreachable", rep: Report{LeftInCluster: unreachable("win-01", "", "https://10.0.0.2:6443", "not deleted: cannot reach")},
			want: "the node was reset, but this was left in the cluster: kube-proxy's token Secret kube-system/swdt-kube-proxy-win-01, if any, swdt's bootstrap tokens for win-01, if any (at https://10.0.0.2:6443): not deleted: cannot reach" +
				". Run swdt join --reset again once the cluster answers, or ignore it if the cluster is gone for good"},
		{name: "a shim that could not be ended", rep: Report{InUse: []ops.JoinProcess{{Path: `C:\Program Files\containerd\containerd-shim-runhcs-v1.exe`, Name: "containerd-shim-runhcs-v1.exe", PID: 1220, Error: "could not end process 1220: Access is denied."}}},
			want: `kept C:\Program Files\containerd\containerd-shim-runhcs-v1.exe: process 1220 (containerd-shim-runhcs-v1.exe) still runs it (could not end process 1220: Access is denied.); end it (Stop-Process -Id 1220) and run swdt join --reset again`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := resetError(&tt.rep); got != tt.want {
				t.Errorf("resetError =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
