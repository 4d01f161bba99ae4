package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// join-write makes the folders of the log files it is asked for, as safe
// as the join's others (kube-log-runner and containerd create their
// files but not the folders), and refuses any other path; a folder a
// non-administrator made there is refused before anything is written.
func TestJoinWriteLogFolders(t *testing.T) {
	t.Parallel()
	files := map[ops.JoinFile]string{ops.JoinFileCA: "CA"}
	tests := []struct {
		name     string
		logs     []string
		plant    string // a folder mallory made first
		wantErr  string
		wantDirs []string
	}{
		{name: "the kubelet's and containerd's", logs: []string{ops.JoinKubeletLog, ops.JoinContainerdLog},
			wantDirs: []string{`C:\var\log\kubelet`, `C:\var\log\containerd`}},
		{name: "none asked", wantDirs: nil},
		{name: "a path of the caller's", logs: []string{`C:\Windows\System32\evil.log`}, wantErr: "is no log file of a join"},
		{name: "mallory's folder", logs: []string{ops.JoinKubeletLog}, plant: `C:\var\log\kubelet`, wantErr: `C:\var\log\kubelet is owned by mallory`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Bare = true }), simnode.WithAccount(simnode.Account{Name: "mallory"}))
			n := ts.Node()
			if tt.plant != "" {
				m, err := ts.NodeAs("mallory")
				must(t, err)
				must(t, m.MkdirAll(tt.plant))
			}
			_, err := agent.Call(context.Background(), n.OS(), ops.JoinWrite, ops.JoinWriteRequest{Files: files, Logs: tt.logs})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("join-write: %v, want %q", err, tt.wantErr)
				}
				if n.Exists(ops.JoinCAFile) {
					t.Error("join-write wrote a file after refusing a log folder")
				}
				if strings.Contains(tt.wantErr, "no log file") && !errors.Is(err, ops.KindBadRequest) {
					t.Errorf("error kind: %v", err)
				}
				return
			}
			must(t, err)
			for _, d := range tt.wantDirs {
				acl, err := n.ACL(d)
				if err != nil || !simnode.AdminOnlyACL(acl) {
					t.Errorf("%s: %v; want it made, for Administrators and SYSTEM only", d, err)
				}
			}
			if tt.wantDirs == nil && n.Exists(winpath.Dir(ops.JoinKubeletLog)) {
				t.Errorf("%s was made without being asked for", winpath.Dir(ops.JoinKubeletLog))
			}
		})
	}
}
