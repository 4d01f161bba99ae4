package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// plantJournal writes a journal naming items as if a swap of them were
// unfinished.
func plantJournal(t *testing.T, n *simnode.Node, items ...ops.SwapItem) {
	t.Helper()
	j := ops.SwapJournal{Owner: lockOwner("z"), Started: "2025-01-01T00:00:00Z",
		Request: ops.ServiceSwapRequest{Items: items, StopOrder: []string{"kubelet"}, StartOrder: []string{"kubelet"}, StartTimeoutMs: 2000, HealthTimeoutMs: 300},
		Stopped: []string{}, Recovery: []ops.JournalRecovery{}}
	raw, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.MkdirAll(ops.AgentDir); err != nil {
		t.Fatal(err)
	}
	if err := n.WriteFile(ops.JournalPath, raw); err != nil {
		t.Fatal(err)
	}
}

// A journal is acted on only as far as a run of the caller's node file
// could have written it: an item for another destination, or with names
// that are not swdt's, is reported and left alone, and health checks come
// from the node file, never from the journal.
func TestSwapRecoverTrustsOnlyTheNodeFile(t *testing.T) {
	t.Parallel()
	const victim = `C:\Windows\System32\whoami.exe`
	tests := []struct {
		name string
		item ops.SwapItem
		why  string
	}{
		{name: "another destination", why: "not a binary of this node file",
			item: ops.SwapItem{Service: "kubelet", Destination: victim, Staged: victim + ".swdt-new-z", Backup: victim + ".swdt-bak"}},
		{name: "a backup that is not swdt's", why: "its backup",
			item: ops.SwapItem{Service: "kubelet", Destination: swapKubelet, Staged: swapKubelet + ".swdt-new-z", Backup: victim}},
		{name: "a staged file that is not swdt's", why: "its staged file",
			item: ops.SwapItem{Service: "kubelet", Destination: swapKubelet, Staged: victim, Backup: swapKubelet + ".swdt-bak"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			before, _, err := n.Hash(victim)
			if err != nil {
				t.Fatal(err)
			}
			kubelet, _, _ := n.Hash(swapKubelet)
			for _, p := range []string{tt.item.Staged, tt.item.Backup} {
				if !strings.EqualFold(p, victim) {
					if err := n.WriteFile(p, []byte("MZ planted")); err != nil {
						t.Fatal(err)
					}
				}
			}
			tt.item.HealthChecks = []ops.HealthCheckSpec{{Command: []string{`C:\ProgramData\planted.exe`}}}
			plantJournal(t, n, tt.item)
			lockTake(t, ts, "b", time.Minute)
			resp, err := agent.Call(context.Background(), n.OS(), ops.SwapRecover, ops.SwapRecoverRequest{RunID: "b",
				Trusted: []ops.TrustedBinary{{Service: "kubelet", Destination: swapKubelet}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Items) != 0 || len(resp.Ignored) != 1 || !strings.Contains(resp.Ignored[0], tt.why) {
				t.Errorf("items %+v, ignored %q; want the item ignored because %s", resp.Items, resp.Ignored, tt.why)
			}
			if after, _, err := n.Hash(victim); err != nil || after != before {
				t.Errorf("%s changed (%s, %v)", victim, after, err)
			}
			if after, _, _ := n.Hash(swapKubelet); after != kubelet {
				t.Error("kubelet.exe changed")
			}
			for _, p := range []string{tt.item.Staged, tt.item.Backup} {
				if !n.Exists(p) {
					t.Errorf("%s, which the journal named, was removed", p)
				}
			}
			if n.Exists(ops.JournalPath) {
				t.Error("the journal was left")
			}
		})
	}
}

// A journal or lock that Administrators and SYSTEM do not own was not
// written by swdt: it is removed unread, and nothing it names is touched.
func TestFootprintFilesOfOtherOwnersAreNotRead(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
	n := ts.Node()
	backup := swapKubelet + ".swdt-bak"
	if err := n.WriteFile(backup, []byte("MZ planted backup")); err != nil {
		t.Fatal(err)
	}
	lockTake(t, ts, "b", time.Minute)
	plantJournal(t, n, ops.SwapItem{Service: "kubelet", Destination: swapKubelet, Staged: swapKubelet + ".swdt-new-z", Backup: backup})
	if err := n.SetOwner(ops.JournalPath, "mallory"); err != nil {
		t.Fatal(err)
	}
	resp, err := agent.Call(context.Background(), n.OS(), ops.SwapRecover, ops.SwapRecoverRequest{RunID: "b",
		Trusted: []ops.TrustedBinary{{Service: "kubelet", Destination: swapKubelet}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Found || len(resp.Ignored) != 1 || !strings.Contains(resp.Ignored[0], "owned by mallory") {
		t.Errorf("found %v, ignored %q; want the journal removed unread", resp.Found, resp.Ignored)
	}
	if !n.Exists(backup) || n.Exists(ops.JournalPath) {
		t.Errorf("backup exists %v (want true), journal exists %v (want false)", n.Exists(backup), n.Exists(ops.JournalPath))
	}

	if _, err := provCall(t, ts, ops.NodeUnlock, ops.NodeUnlockRequest{RunID: "b"}); err != nil {
		t.Fatal(err)
	}
	lockTake(t, ts, "a", time.Hour)
	if err := n.SetOwner(ops.LockPath, "mallory"); err != nil {
		t.Fatal(err)
	}
	got, err := lockVia(t, ts, ops.NodeLockRequest{Owner: lockOwner("b"), StaleAfterMs: 60000})
	if err != nil || !got.Acquired {
		t.Errorf("a lock mallory owns kept run b out: %+v, %v", got, err)
	}
}

// A footprint folder that another account owns, or that others may
// write, is given back to Administrators and SYSTEM before the lock or
// the journal is used.
func TestFootprintIsRepaired(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
	n := ts.Node()
	w := n.OS()
	if err := n.MkdirAll(ops.AgentDir); err != nil {
		t.Fatal(err)
	}
	if err := w.SetACL(ops.AgentDir, winos.ACL{Entries: []winos.ACE{{SID: winos.SIDUsers, Mask: winos.FileAllAccess, Inherit: true}}}); err != nil {
		t.Fatal(err)
	}
	if err := n.SetOwner(ops.AgentDir, "mallory"); err != nil {
		t.Fatal(err)
	}
	if got, err := lockVia(t, ts, ops.NodeLockRequest{Owner: lockOwner("b"), StaleAfterMs: 60000}); err != nil || !got.Acquired {
		t.Fatalf("lock: %+v, %v", got, err)
	}
	if owner, err := w.Owner(ops.AgentDir); err != nil || owner != winos.SIDAdministrators {
		t.Errorf("owner = %s, %v; want Administrators", owner, err)
	}
	acl, err := w.ACL(ops.AgentDir)
	if err != nil {
		t.Fatal(err)
	}
	if !acl.Protected {
		t.Error("the folder still inherits")
	}
	for _, e := range acl.Entries {
		if e.SID != winos.SIDAdministrators && e.SID != winos.SIDSystem {
			t.Errorf("the folder still grants %s %#x", e.SID, e.Mask)
		}
	}
	mallory, err := ts.NodeAs("mallory")
	if err != nil {
		t.Fatal(err)
	}
	if err := mallory.WriteFile(ops.AgentDir+`\planted.exe`, []byte("x")); err == nil {
		t.Error("mallory may still write the footprint")
	}
}

// A repair killed at any of its steps leaves the journal, and the next
// repair finishes the job: every service Running, the old binary in
// place, the journal gone.
func TestSwapRecoverKilledDuringRepair(t *testing.T) {
	t.Parallel()
	holds := []simnode.AgentHold{
		{Call: "Rename", Target: `C:\k\kubelet.exe`},
		{Call: "StartService", Target: "kubelet"},
		{Call: "StartService", Target: "kube-proxy"},
		{Call: "SetRecovery", Target: "kubelet"},
	}
	for _, hold := range holds {
		t.Run(hold.Call+" "+hold.Target, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n, w := ts.Node(), ts.Node().OS()
			rec := winos.Recovery{Actions: []winos.RecoveryAction{{Type: winos.RecoveryRestart, Delay: 5 * time.Second}}, ResetPeriod: time.Hour}
			if err := w.SetRecovery("kubelet", rec); err != nil {
				t.Fatal(err)
			}
			old, err := n.ReadFile(swapKubelet)
			if err != nil {
				t.Fatal(err)
			}
			it := swapStage(t, n, "kubelet", swapKubelet, []byte("MZ kubelet v2"))
			req := swapKubeletRequest(it)
			req.Owner = lockOwner("a")
			lockTake(t, ts, "a", time.Minute)
			// The swap is killed between its two renames: the repair
			// must put the backup back and start the services.
			if err := ts.SetFaults(simnode.Faults{HoldAgent: &simnode.AgentHold{Op: ops.ServiceSwap.Name, Call: "Rename", Target: `C:\k\kubelet.exe`, Cut: true, Dies: true}}); err != nil {
				t.Fatal(err)
			}
			if err := sshSwap(t, ts, req); err == nil {
				t.Fatal("the swap answered although its agent was killed")
			}
			recover := ops.SwapRecoverRequest{RunID: "a", Trusted: []ops.TrustedBinary{{Service: "kubelet", Destination: swapKubelet}}}
			h := hold
			h.Op, h.Cut, h.Dies = ops.SwapRecover.Name, true, true
			if err := ts.SetFaults(simnode.Faults{HoldAgent: &h}); err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(recover)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var out, errOut strings.Builder
			_, _ = ts.Execer().Exec(ctx, ops.CommandLine(ts.InstallAgent(), ops.SwapRecover.Name), strings.NewReader(string(raw)), &out, &errOut)
			if n.HoldsReached() != 2 {
				t.Fatalf("the repair was not killed at %s %s", hold.Call, hold.Target)
			}
			if !n.Exists(ops.JournalPath) {
				t.Fatal("the killed repair removed the journal")
			}
			if err := ts.SetFaults(simnode.Faults{}); err != nil {
				t.Fatal(err)
			}
			resp, err := agent.Call(context.Background(), w, ops.SwapRecover, recover)
			if err != nil {
				t.Fatal(err)
			}
			if !resp.Found || len(resp.Items) != 1 || resp.Items[0].Binary != ops.RecoveredOld {
				t.Fatalf("second repair = %+v", resp)
			}
			if b, _ := n.ReadFile(swapKubelet); string(b) != string(old) {
				t.Errorf("kubelet.exe holds %q, want the old binary", b)
			}
			swapAllRunning(t, n)
			if r, err := w.Recovery("kubelet"); err != nil || len(r.Actions) != 1 {
				t.Errorf("failure actions = %+v, %v; want them back", r, err)
			}
			if n.Exists(ops.JournalPath) {
				t.Error("the journal was left")
			}
		})
	}
}

// selfOwnedOS plays a node whose policy makes an administrator's new
// files its own (the token's default owner is the account, not
// Administrators): every file belongs to the agent's account.
type selfOwnedOS struct {
	winos.OS
	sid string
}

func (o selfOwnedOS) Owner(p string) (string, error) {
	if _, err := o.OS.Owner(p); err != nil {
		return "", err
	}
	return o.sid, nil
}

func (o selfOwnedOS) CurrentUser() (winos.User, error) {
	u, err := o.OS.CurrentUser()
	u.Owner = o.sid
	return u, err
}

// Files the agent's own administrator account owns are swdt's: its
// journal is read and repaired, not removed as another account's.
func TestFootprintFilesOfTheAgentsAccountAreTrusted(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	lockTake(t, ts, "b", time.Minute)
	plantJournal(t, n, ops.SwapItem{Service: "kubelet", Destination: swapKubelet, Staged: swapKubelet + ".swdt-new-z", Backup: swapKubelet + ".swdt-bak"})
	w := selfOwnedOS{OS: n.OS(), sid: "S-1-5-21-1004336348-1177238915-682003330-500"}
	resp, err := agent.Call(context.Background(), w, ops.SwapRecover, ops.SwapRecoverRequest{RunID: "b",
		Trusted: []ops.TrustedBinary{{Service: "kubelet", Destination: swapKubelet}}})
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Found || len(resp.Items) != 1 || len(resp.Ignored) != 0 {
		t.Errorf("found %v, items %+v, ignored %q; want the journal repaired", resp.Found, resp.Items, resp.Ignored)
	}
}
