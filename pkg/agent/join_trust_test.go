package agent_test

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// On a fresh Windows Server, TrustedInstaller owns C:\Program Files (and
// has full control of it): the join's folder walk trusts it as it trusts
// SYSTEM, so containerd's folder below it is usable; only the folders of
// what the join installs are checked, and one another account owns is
// still refused.
func TestJoinTrustsTrustedInstaller(t *testing.T) {
	t.Parallel()
	files := map[ops.JoinFile]string{ops.JoinFileCA: "CA", ops.JoinFileKubeletConfig: "kind: KubeletConfiguration\n", ops.JoinFileContainerdConfig: "version = 2\n"}
	tests := []struct {
		name       string
		prepare    func(t *testing.T, n, m *simnode.Node)
		inspect    ops.JoinInspectRequest
		wantUnsafe string // a prefix of inspect's first Unsafe; "" none
	}{
		{name: "a fresh node, containerd and CNI", inspect: ops.JoinInspectRequest{Containerd: true, CNI: true}},
		{name: "a fresh node, the kubelet only", inspect: ops.JoinInspectRequest{}},
		{name: "another account made C:\\opt, no CNI plugins", prepare: func(t *testing.T, _, m *simnode.Node) {
			must(t, m.MkdirAll(`C:\opt\cni`))
		}, inspect: ops.JoinInspectRequest{Containerd: true}},
		{name: "another account made C:\\opt, CNI plugins", prepare: func(t *testing.T, _, m *simnode.Node) {
			must(t, m.MkdirAll(`C:\opt\cni`))
		}, inspect: ops.JoinInspectRequest{CNI: true}, wantUnsafe: `C:\opt is owned by mallory`},
		{name: "another account owns C:\\Program Files\\containerd", prepare: func(t *testing.T, n, _ *simnode.Node) {
			must(t, n.MkdirAll(`C:\Program Files\containerd`))
			must(t, n.SetOwner(`C:\Program Files\containerd`, "mallory"))
		}, inspect: ops.JoinInspectRequest{Containerd: true}, wantUnsafe: `C:\Program Files\containerd is owned by mallory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Bare = true }), simnode.WithAccount(simnode.Account{Name: "mallory"}))
			n := ts.Node()
			m, err := ts.NodeAs("mallory")
			must(t, err)
			if tt.prepare != nil {
				tt.prepare(t, n, m)
			}
			if owner, _ := n.OS().Owner(`C:\Program Files`); owner != winos.SIDTrustedInstaller {
				t.Fatalf("C:\\Program Files belongs to %s, not TrustedInstaller as on a fresh Windows Server", owner)
			}
			ctx := context.Background()
			ins, err := agent.Call(ctx, n.OS(), ops.JoinInspect, tt.inspect)
			must(t, err)
			if tt.wantUnsafe == "" && len(ins.Unsafe) > 0 || tt.wantUnsafe != "" && (len(ins.Unsafe) == 0 || !strings.HasPrefix(ins.Unsafe[0], tt.wantUnsafe)) {
				t.Fatalf("inspect: unsafe %q, want %q", ins.Unsafe, tt.wantUnsafe)
			}
			if tt.wantUnsafe != "" {
				return
			}
			write := ops.JoinWriteRequest{Files: files, CNI: tt.inspect.CNI}
			if !tt.inspect.Containerd {
				delete(write.Files, ops.JoinFileContainerdConfig)
			}
			if _, err := agent.Call(ctx, n.OS(), ops.JoinWrite, write); err != nil {
				t.Fatalf("join-write: %v", err)
			}
			if owner, _ := n.OS().Owner(`C:\Program Files`); owner != winos.SIDTrustedInstaller {
				t.Errorf("the join changed C:\\Program Files' owner to %s", owner)
			}
		})
	}
}
