package agent_test

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

func TestServiceRegister(t *testing.T) {
	t.Parallel()
	const program = `C:\k\csi-proxy.exe`
	tests := []struct {
		name     string
		req      ops.ServiceRegisterRequest
		kind     ops.Kind // the failure's kind; "" for success
		mentions string
	}{
		{name: "registered stopped, with its arguments",
			req: ops.ServiceRegisterRequest{Name: "csi-proxy", Program: program, Args: []string{"-v", "4", "--log dir=C:\\k logs"},
				DisplayName: "CSI Proxy", StartType: "Manual", DependsOn: []string{"containerd"}}},
		{name: "the program must be on the node", req: ops.ServiceRegisterRequest{Name: "csi-proxy", Program: `C:\k\missing.exe`},
			kind: "not-found", mentions: `C:\k\missing.exe`},
		{name: "an existing service is not changed", req: ops.ServiceRegisterRequest{Name: "kubelet", Program: program},
			kind: "exists", mentions: "kubelet"},
		{name: "a start type it does not know", req: ops.ServiceRegisterRequest{Name: "csi-proxy", Program: program, StartType: "Disabled"},
			kind: "invalid", mentions: "Disabled"},
		{name: "a name and a program are needed", req: ops.ServiceRegisterRequest{Program: program}, kind: "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			if err := n.WriteFile(program, []byte("MZ csi-proxy")); err != nil {
				t.Fatal(err)
			}
			kubelet := *ts.State().Services["kubelet"]
			resp, err := provCall(t, ts, ops.ServiceRegister, tt.req)
			if tt.kind != "" {
				if kind, msg := provFailure(t, err); kind != tt.kind || !strings.Contains(msg, tt.mentions) {
					t.Fatalf("failure %s %q, want kind %s naming %q", kind, msg, tt.kind, tt.mentions)
				}
				st := ts.State()
				if st.Services["csi-proxy"] != nil || st.Services["kubelet"].BinaryPath != kubelet.BinaryPath {
					t.Error("a refused registration changed the services")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			svc := ts.State().Services["csi-proxy"]
			if svc == nil || svc.Status != "Stopped" || svc.StartType != "Manual" || svc.DisplayName != "CSI Proxy" ||
				svc.BinaryPath != program || !slices.Equal(svc.Args, tt.req.Args) || !slices.Equal(svc.Dependencies, tt.req.DependsOn) {
				t.Fatalf("service = %+v", svc)
			}
			if !resp.Service.Exists || resp.Service.Status != "Stopped" || resp.Service.Executable != program {
				t.Errorf("response = %+v", resp.Service)
			}
		})
	}
}
