package agent_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// tamperOnStop is the node's Windows layer, where another program
// rewrites a file at the swap's first stop: after the staged file was
// verified, before it is renamed into place.
type tamperOnStop struct {
	winos.OS
	tamper func()
	done   bool
}

func (t *tamperOnStop) StopService(name string) error {
	if !t.done {
		t.done = true
		t.tamper()
	}
	return t.OS.StopService(name)
}

// A staged file changed between its check and its rename, even keeping
// its size and last-write time, is hashed again and not swapped in.
func TestStagedFileRehashedBeforeRename(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	old, err := n.ReadFile(swapKubelet)
	if err != nil {
		t.Fatal(err)
	}
	good, evil := []byte("MZ kubelet v2 good"), []byte("MZ kubelet v2 EVIL")
	it := swapStage(t, n, "kubelet", swapKubelet, good)
	req := swapKubeletRequest(it)
	req.Owner = lockOwner("a")
	lockTake(t, ts, "a", time.Minute)
	sc := ts.SFTP(ts.User())
	staged := "/" + strings.ReplaceAll(it.Staged, `\`, "/")
	// A whole second: SFTP sets times to the second.
	stamp := time.Unix(1700000000, 0)
	if err := sc.Chtimes(staged, stamp, stamp); err != nil {
		t.Fatal(err)
	}
	w := &tamperOnStop{OS: n.OS(), tamper: func() {
		f, err := sc.OpenFile(staged, 0x2) // O_WRONLY: same size, new bytes
		if err == nil {
			_, err = f.Write(evil)
			f.Close()
		}
		if err == nil {
			err = sc.Chtimes(staged, stamp, stamp)
		}
		if err != nil {
			t.Error(err)
		}
	}}
	resp, err := agent.Call(context.Background(), w, ops.ServiceSwap, req)
	if err != nil {
		t.Fatal(err)
	}
	if !w.done {
		t.Fatal("the swap stopped no service")
	}
	if len(resp.Items) != 1 || resp.Items[0].Result != ops.SwapResultFailed || !strings.Contains(resp.Items[0].Error, "has SHA-256") {
		t.Fatalf("items = %+v, want the item failed for its digest", resp.Items)
	}
	if b, _ := n.ReadFile(swapKubelet); !bytes.Equal(b, old) {
		t.Errorf("kubelet.exe holds %q, want the old binary", b)
	}
	swapAllRunning(t, n)
}

// With the destination missing and its backup present, a new build that
// crashes leaves the old binary in place (the backup is put back before
// anything stops and the swap rolls back to it), and the result says so.
// A backup another account owns is never put into place.
func TestMissingDestinationKeepsItsBackup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		owner     string
		wantError string
	}{
		{name: "swdt's backup"},
		{name: "a backup another account created", owner: "mallory", wantError: "not swdt's backup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
			n := ts.Node()
			old, err := n.ReadFile(swapKubelet)
			if err != nil {
				t.Fatal(err)
			}
			// A swap cut short between its renames, its services
			// stopped.
			for _, name := range []string{"kube-proxy", "kubelet"} {
				if err := n.StopService(name); err != nil {
					t.Fatal(err)
				}
				swapWait(t, n, name, simnode.StatusStopped)
			}
			backup := swapKubelet + ".swdt-bak"
			if err := n.Rename(swapKubelet, backup, false); err != nil {
				t.Fatal(err)
			}
			if tt.owner != "" {
				if err := n.SetOwner(backup, tt.owner); err != nil {
					t.Fatal(err)
				}
			}
			it := swapStage(t, n, "kubelet", swapKubelet, []byte("MZ "+simnode.MarkerCrashOnStart))
			req := swapKubeletRequest(it)
			req.Owner = lockOwner("a")
			lockTake(t, ts, "a", time.Minute)
			resp, err := agent.Call(context.Background(), n.OS(), ops.ServiceSwap, req)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("err = %v, want %q", err, tt.wantError)
				}
				if b, _ := n.ReadFile(backup); !bytes.Equal(b, old) {
					t.Error("the backup changed")
				}
				if n.Exists(swapKubelet) {
					t.Error("a backup another account owns was put into place")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Items) != 1 || resp.Items[0].Result != ops.SwapResultRolledBack {
				t.Fatalf("items = %+v, want rolled back", resp.Items)
			}
			if notes := strings.Join(resp.Items[0].Notes, " "); !strings.Contains(notes, "was missing") {
				t.Errorf("notes %q do not say the destination was missing", notes)
			}
			if b, _ := n.ReadFile(swapKubelet); !bytes.Equal(b, old) {
				t.Errorf("kubelet.exe holds %q, want the old binary", b)
			}
			swapAllRunning(t, n)
		})
	}
}

// A config.swdt-new another account created before swdt writes wins'
// config is not adopted: the config swdt puts in place belongs to
// Administrators, and its creator cannot change it.
func TestWinsConfigStagedFileIsNeverAdopted(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
	n := ts.Node()
	dir := testWinsConfig[:strings.LastIndex(testWinsConfig, `\`)]
	if err := n.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	mallory, err := ts.NodeAs("mallory")
	if err != nil {
		t.Fatal(err)
	}
	if err := mallory.WriteFile(testWinsConfig+".swdt-new", []byte("planted")); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Call(context.Background(), n.OS(), ops.WinsConfigWrite, ops.WinsConfigWriteRequest{Path: testWinsConfig, Content: "debug: true\n"}); err != nil {
		t.Fatal(err)
	}
	if owner, err := n.Owner(testWinsConfig); err != nil || owner != simnode.AccountAdministrators {
		t.Errorf("wins' config belongs to %q (%v), want Administrators", owner, err)
	}
	if err := mallory.WriteFile(testWinsConfig, []byte("white_list: {processPaths: [C:\\ProgramData\\evil.exe]}\n")); err == nil {
		t.Error("mallory may rewrite wins' config")
	}
}
