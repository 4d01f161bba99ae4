package agent_test

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// service-configure changes an existing service to what register says,
// leaves it running, and reports what it changed; the inspect op reports
// the same differences as drift before.
func TestServiceConfigure(t *testing.T) {
	t.Parallel()
	const program = `C:\k\kubelet.exe`
	tests := []struct {
		name     string
		req      ops.ServiceRegisterRequest
		kind     ops.Kind // the failure's kind; "" for success
		mentions string
		changed  []string
	}{
		{name: "new args, start type, display name and dependencies",
			req: ops.ServiceRegisterRequest{Name: "kubelet", Program: program, Args: []string{"--v=4", `--root-dir=C:\var lib\kubelet\`},
				DisplayName: "Kubelet", StartType: "Manual", DependsOn: []string{"containerd"}},
			changed: []string{`-> [--v=4 "--root-dir=C:\var lib\kubelet\"]`, "startType: Automatic -> Manual", `displayName: "kubelet" -> "Kubelet"`}},
		{name: "a service that does not exist", req: ops.ServiceRegisterRequest{Name: "csi-proxy", Program: program},
			kind: "not-found", mentions: "csi-proxy"},
		{name: "a start type it does not know", req: ops.ServiceRegisterRequest{Name: "kubelet", Program: program, StartType: "Disabled"},
			kind: "invalid", mentions: "Disabled"},
		{name: "a name and a program are needed", req: ops.ServiceRegisterRequest{Name: "kubelet"}, kind: "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			before := *ts.State().Services["kubelet"]
			inspect, err := provCall(t, ts, ops.ProvisionInspect, ops.ProvisionInspectRequest{Targets: []ops.ProvisionTarget{
				{Service: "kubelet", Destination: program, Register: &tt.req}}})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := provCall(t, ts, ops.ServiceConfigure, tt.req)
			after := ts.State().Services["kubelet"]
			if tt.kind != "" {
				if kind, msg := provFailure(t, err); kind != tt.kind || !strings.Contains(msg, tt.mentions) {
					t.Fatalf("failure %s %q, want kind %s naming %q", kind, msg, tt.kind, tt.mentions)
				}
				if !slices.Equal(after.Args, before.Args) || after.StartType != before.StartType {
					t.Error("a refused change changed the service")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cur := inspect.Current[0]; !slices.Equal(cur.Args, before.Args) || !strings.EqualFold(cur.Program, before.BinaryPath) ||
				cur.StartType != string(before.StartType) || cur.DisplayName != before.DisplayName || !slices.Equal(cur.DependsOn, before.Dependencies) {
				t.Errorf("inspect's current configuration %+v, want the service's %+v", cur, before)
			}
			if !slices.Equal(resp.Changed, inspect.Drift[0]) || len(resp.Changed) != 3 {
				t.Errorf("changed %q, inspect's drift %q", resp.Changed, inspect.Drift[0])
			}
			for _, want := range tt.changed {
				if !strings.Contains(strings.Join(resp.Changed, "\n"), want) {
					t.Errorf("changed %q lacks %q", resp.Changed, want)
				}
			}
			if !slices.Equal(after.Args, tt.req.Args) || after.StartType != "Manual" || after.DisplayName != "Kubelet" ||
				!slices.Equal(after.Dependencies, tt.req.DependsOn) || after.PID != before.PID || after.Status != "Running" {
				t.Errorf("service = %+v, want the new config and the same process", after)
			}
			again, err := provCall(t, ts, ops.ProvisionInspect, ops.ProvisionInspectRequest{Targets: []ops.ProvisionTarget{
				{Service: "kubelet", Destination: program, Register: &tt.req}}})
			if err != nil || len(again.Drift) != 0 {
				t.Errorf("drift after the change: %v, %v", again.Drift, err)
			}
		})
	}
}
