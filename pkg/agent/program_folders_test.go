package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// The folder a swap puts a program in (C:\k), made by an ordinary user
// before swdt came, is refused before anything stops, by the inspect and
// by the swap; one an administrator made, which inherits C:\'s grants,
// is made safe first: afterwards the user can put nothing there.
func TestProgramFolders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// plant has mallory make the folder and put a file in it.
		plant bool
		// usersModify gives Users modify rights on the folder (what a
		// folder an administrator made below C:\ inherits).
		usersModify bool
		dest        string
		wantRefused string
		wantNote    bool
		// again runs the swap a second time first.
		again bool
	}{
		{name: "a folder mallory made is refused", plant: true, dest: `C:\tools\kubelet.exe`, wantRefused: `C:\tools is owned by mallory`},
		{name: "a folder others may change is made safe", usersModify: true, dest: `C:\k\tool.exe`, wantNote: true},
		{name: "a folder made safe before is left as it is", dest: `C:\k\tool.exe`, again: true},
		{name: "a program directly in C:\\ProgramData is refused", dest: `C:\ProgramData\kubelet.exe`, wantRefused: `C:\ProgramData is shared by every user`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
			n := ts.Node()
			dir := tt.dest[:strings.LastIndex(tt.dest, `\`)]
			mallory, err := ts.NodeAs("mallory")
			if err != nil {
				t.Fatal(err)
			}
			if tt.plant {
				if err := mallory.MkdirAll(dir); err != nil {
					t.Fatal(err)
				}
				if err := mallory.WriteFile(dir+`\notes.txt`, []byte("mallory's")); err != nil {
					t.Fatal(err)
				}
			}
			if tt.usersModify {
				acl := &simnode.ACL{Entries: []simnode.ACE{{Identity: simnode.AccountUsers, Rights: "M", ObjectInherit: true, ContainerInherit: true}}}
				if err := n.SetACL(dir, acl); err != nil {
					t.Fatal(err)
				}
			}
			ins, err := agent.Call(context.Background(), n.OS(), ops.ProvisionInspect, ops.ProvisionInspectRequest{Targets: []ops.ProvisionTarget{{Destination: tt.dest}}})
			if err != nil {
				t.Fatal(err)
			}
			if refused := strings.Join(ins.UnsafeFolders, "; "); (tt.wantRefused != "") != (refused != "") || !strings.Contains(refused, tt.wantRefused) {
				t.Errorf("inspect: unsafe folders %q, want one naming %q", refused, tt.wantRefused)
			}
			swap := func(content string) (ops.ServiceSwapResponse, error) {
				it := swapStage(t, n, "", tt.dest, []byte(content))
				return agent.Call(context.Background(), n.OS(), ops.ServiceSwap, ops.ServiceSwapRequest{Items: []ops.SwapItem{it},
					StopTimeoutMs: 300, StartTimeoutMs: 2000, HealthTimeoutMs: 300})
			}
			if tt.again {
				if _, err := swap("MZ the first build"); err != nil {
					t.Fatal(err)
				}
			}
			resp, err := swap("MZ the new build")
			var f *agent.Failure
			if tt.wantRefused != "" {
				if !errors.As(err, &f) || f.Kind != ops.KindUnsafeFolder || !strings.Contains(f.Message, tt.wantRefused) || !strings.Contains(f.Message, "nothing was changed") {
					t.Fatalf("swap = %+v, %v; want unsafe-folder naming %q", resp, err, tt.wantRefused)
				}
				if n.Exists(tt.dest) {
					t.Error("the program was put in place")
				}
				return
			}
			if err != nil || len(resp.Items) != 1 || resp.Items[0].Result != ops.SwapResultSwapped {
				t.Fatalf("swap = %+v, %v", resp, err)
			}
			note := strings.Join(resp.Items[0].Notes, "; ")
			if tt.wantNote != strings.Contains(note, "was not safe") {
				t.Errorf("notes %q, want a repair noted: %v", note, tt.wantNote)
			}
			if err := mallory.WriteFile(tt.dest, []byte("MZ mallory's")); err == nil {
				t.Error("mallory replaced the program after the swap")
			}
			if err := mallory.WriteFile(dir+`\other.exe`, []byte("MZ mallory's")); err == nil {
				t.Error("mallory put a program beside it after the swap")
			}
		})
	}
}

// wins' config folder (it says which programs wins starts as SYSTEM) is
// checked like a program's: mallory's is refused, nothing written.
func TestWinsConfigFolderMalloryMade(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
	mallory, err := ts.NodeAs("mallory")
	if err != nil {
		t.Fatal(err)
	}
	const dir = `C:\etc\rancher\wins`
	if err := mallory.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	_, err = agent.Call(context.Background(), ts.Node().OS(), ops.WinsConfigWrite, ops.WinsConfigWriteRequest{Path: dir + `\config`, Content: "whiteList: {}\n"})
	var f *agent.Failure
	if !errors.As(err, &f) || f.Kind != ops.KindUnsafeFolder || !strings.Contains(f.Message, `C:\etc\rancher is owned by mallory`) {
		t.Fatalf("wins config write into mallory's folder = %v; want unsafe-folder naming C:\\etc\\rancher and mallory", err)
	}
	if ts.Node().Exists(dir + `\config`) {
		t.Error("the config was written")
	}
}

// What an earlier run staged and never swapped (a double Ctrl-C, a
// killed swdt) is removed by the next run that takes the lock with no
// swap unfinished: this run's own staged files stay, and so does what
// another account put there (never moved or deleted).
func TestInspectRemovesStagedFilesOfEarlierRuns(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
	n := ts.Node()
	mallory, err := ts.NodeAs("mallory")
	if err != nil {
		t.Fatal(err)
	}
	planted := `C:\k\kubelet.exe.swdt-new-evil`
	if err := mallory.WriteFile(planted, []byte("MZ mallory's")); err != nil {
		t.Fatal(err)
	}
	const dest = `C:\k\kubelet.exe`
	old := []string{dest + ".swdt-new-aborted1", dest + ".swdt-new-aborted2.swdt-zst", dest + ".swdt-new-aborted3.swdt-part"}
	mine := dest + ".swdt-new-run2"
	for _, p := range append(old, mine) {
		if err := n.WriteFile(p, []byte("MZ staged")); err != nil {
			t.Fatal(err)
		}
	}
	req := ops.ProvisionInspectRequest{Targets: []ops.ProvisionTarget{{Service: "kubelet", Destination: dest}},
		Lock: &ops.NodeLockRequest{Owner: lockOwner("run2"), StaleAfterMs: 60000}}
	resp, err := agent.Call(context.Background(), n.OS(), ops.ProvisionInspect, req)
	if err != nil || resp.Locked == nil || !resp.Locked.Acquired {
		t.Fatalf("inspect = %+v, %v", resp, err)
	}
	if len(resp.RemovedLeftovers) != len(old) {
		t.Errorf("removed %q, want %q", resp.RemovedLeftovers, old)
	}
	for _, p := range old {
		if n.Exists(p) {
			t.Errorf("%s is still there", p)
		}
	}
	if !n.Exists(mine) || !n.Exists(dest) || !n.Exists(planted) {
		t.Error("the run's own staged file, the destination or mallory's file was removed")
	}
}
