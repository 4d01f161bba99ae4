package agent_test

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The swap on a node that lacks Win32 calls, as Wine and hardened images
// do: it does without them and says so, instead of failing.
func TestServiceSwapOnMissingAPIs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		missing   string
		checks    []ops.HealthCheckSpec
		result    string
		errSubstr string
		unknown   []string // RecoveryUnknown
	}{
		{name: "failure actions cannot be read", missing: simnode.MissingAPIFailureActions,
			result: ops.SwapResultSwapped, unknown: []string{"kubelet", "kube-proxy"}},
		{name: "pipes cannot be listed: the pipe is probed by name", missing: simnode.MissingAPIPipeListing,
			checks: []ops.HealthCheckSpec{{NamedPipe: `\\.\pipe\CONTAINERD-containerd`}}, result: ops.SwapResultSwapped},
		{name: "pipes cannot be listed: a missing pipe fails the check", missing: simnode.MissingAPIPipeListing,
			checks: []ops.HealthCheckSpec{{NamedPipe: "kubelet-pipe"}}, result: ops.SwapResultRolledBack,
			errSubstr: `named pipe \\.\pipe\kubelet-pipe does not exist`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			restart := winos.Recovery{Actions: []winos.RecoveryAction{{Type: winos.RecoveryRestart}}}
			if err := n.OS().SetRecovery("kubelet", restart); err != nil {
				t.Fatal(err)
			}
			if err := ts.UpdateFaults(func(f *simnode.Faults) { f.MissingAPIs = []string{tt.missing} }); err != nil {
				t.Fatal(err)
			}
			it := swapStage(t, n, "kubelet", swapKubelet, []byte("MZ kubelet "+tt.name), tt.checks...)
			resp, err := provCall(t, ts, ops.ServiceSwap, swapKubeletRequest(it))
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Items[0]; got.Result != tt.result || !strings.Contains(got.Error, tt.errSubstr) {
				t.Errorf("result %s %q, want %s containing %q", got.Result, got.Error, tt.result, tt.errSubstr)
			}
			if !slices.Equal(resp.RecoveryUnknown, tt.unknown) {
				t.Errorf("recoveryUnknown = %v, want %v", resp.RecoveryUnknown, tt.unknown)
			}
			swapAllRunning(t, n)
		})
	}
}
