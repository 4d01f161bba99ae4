package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// join-write writes only its fixed files, each admin-only, and only when
// the content differs; join-inspect reports them and the kubelet's
// kubeconfig; join-reset removes the service and every file.
func TestJoinOps(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Bare = true }))
	n, w := ts.Node(), ts.Node().OS()
	ctx := context.Background()

	if _, err := agent.Call(ctx, w, ops.JoinWrite, ops.JoinWriteRequest{Files: map[ops.JoinFile]string{"../../evil": "x"}}); err == nil || !strings.Contains(err.Error(), "unknown file") {
		t.Fatalf("an unknown role was accepted: %v", err)
	}
	files := map[ops.JoinFile]string{ops.JoinFileCA: "CA", ops.JoinFileBootstrapKubeconfig: "token", ops.JoinFileKubeletConfig: "kind: KubeletConfiguration\n"}
	for i, want := range [][]ops.JoinFile{
		{ops.JoinFileBootstrapKubeconfig, ops.JoinFileCA, ops.JoinFileKubeletConfig},
		nil,
	} {
		resp, err := agent.Call(ctx, w, ops.JoinWrite, ops.JoinWriteRequest{Files: files})
		if err != nil || !slices.Equal(resp.Changed, want) {
			t.Fatalf("write %d: %+v %v", i, resp, err)
		}
	}
	for role, content := range files {
		p := ops.JoinFilePaths[role]
		if got, _ := n.ReadFile(p); string(got) != content {
			t.Errorf("%s = %q", p, got)
		}
		if acl, _ := n.ACL(p); !simnode.AdminOnlyACL(acl) {
			t.Errorf("%s is not restricted to Administrators and SYSTEM", p)
		}
	}
	if err := n.WriteFile(ops.JoinKubeconfig, []byte("apiVersion: v1\n")); err != nil {
		t.Fatal(err)
	}
	ins, err := agent.Call(ctx, w, ops.JoinInspect, ops.JoinInspectRequest{})
	if err != nil || ins.Hostname == "" || ins.Kubeconfig != "apiVersion: v1\n" || len(ins.Files) != 3 {
		t.Fatalf("inspect %+v %v", ins, err)
	}

	if err := n.MkdirAll(`C:\k`); err != nil {
		t.Fatal(err)
	}
	if err := n.WriteFile(`C:\k\kubelet.exe`, []byte("MZ kubelet")); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Call(ctx, w, ops.ServiceRegister, ops.ServiceRegisterRequest{Name: "kubelet", Program: `C:\k\kubelet.exe`}); err != nil {
		t.Fatal(err)
	}
	if err := n.StartService("kubelet"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		resp, err := agent.Call(ctx, w, ops.JoinReset, ops.JoinResetRequest{Services: []ops.JoinService{
			{Name: "kubelet", Binary: `C:\k\kubelet.exe`}, {Name: "containerd", Binary: `C:\Program Files\containerd\containerd.exe`}}})
		if err != nil {
			t.Fatalf("reset %d: %v", i, err)
		}
		if (i == 0) != slices.Equal(resp.Deleted, []string{"kubelet"}) || (i == 0) != (len(resp.Removed) == 5) || (i == 1) != (len(resp.Removed) == 0) {
			t.Errorf("reset %d: %+v", i, resp)
		}
	}
	if ts.State().Services["kubelet"] != nil || n.Exists(ops.JoinKubeconfig) || n.Exists(`C:\k\kubelet.exe`) {
		t.Error("reset left the service or files")
	}
}
