package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

func lockOwner(id string) ops.LockOwner {
	return ops.LockOwner{RunID: id, Host: "laptop", PID: 4242, Command: "swdt kubernetes", Started: "2025-01-01T00:00:00Z"}
}

// lockVia asks for the lock as a run does: provision-inspect with a lock
// request and no targets.
func lockVia(t *testing.T, ts *simnode.TestServer, req ops.NodeLockRequest) (ops.NodeLockResponse, error) {
	t.Helper()
	resp, err := provCall(t, ts, ops.ProvisionInspect, ops.ProvisionInspectRequest{Lock: &req})
	if err != nil {
		return ops.NodeLockResponse{}, err
	}
	if resp.Locked == nil {
		t.Fatalf("provision-inspect with a lock request answered without locked: %+v", resp)
	}
	return *resp.Locked, nil
}

// lockTake takes the lock for id and fails the test unless it did.
func lockTake(t *testing.T, ts *simnode.TestServer, id string, staleAfter time.Duration) {
	t.Helper()
	resp, err := lockVia(t, ts, ops.NodeLockRequest{Owner: lockOwner(id), StaleAfterMs: staleAfter.Milliseconds()})
	if err != nil || !resp.Acquired {
		t.Fatalf("lock %s: %+v, %v", id, resp, err)
	}
}

func TestNodeLockRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// held is the run holding the lock first ("" for none), valid
		// for heldFor, having staged heldStaged.
		held       string
		heldFor    time.Duration
		heldStaged []string
		req        ops.NodeLockRequest
		// age is how long ago the holder last renewed the lock (the
		// lock file's last-write time is set back by that much).
		age  time.Duration
		want ops.NodeLockResponse
		// wantHolder is the lock's owner afterwards.
		wantHolder string
	}{
		{name: "a free lock is taken", req: ops.NodeLockRequest{Owner: lockOwner("b"), StaleAfterMs: 60000},
			want: ops.NodeLockResponse{Acquired: true}, wantHolder: "b"},
		{name: "a live holder is reported", held: "a", heldFor: time.Minute, req: ops.NodeLockRequest{Owner: lockOwner("b"), StaleAfterMs: 60000},
			want: ops.NodeLockResponse{Holder: &ops.LockHolder{Owner: lockOwner("a"), StaleAfterMs: 60000}}, wantHolder: "a"},
		{name: "its own run takes it again", held: "b", heldFor: time.Minute, req: ops.NodeLockRequest{Owner: lockOwner("b"), StaleAfterMs: 60000},
			want: ops.NodeLockResponse{Acquired: true}, wantHolder: "b"},
		{name: "a live holder that renewed a while ago is reported", held: "a", heldFor: time.Minute, age: 50 * time.Second,
			req:  ops.NodeLockRequest{Owner: lockOwner("b"), StaleAfterMs: 60000},
			want: ops.NodeLockResponse{Holder: &ops.LockHolder{Owner: lockOwner("a"), StaleAfterMs: 60000}}, wantHolder: "a"},
		{name: "a stale holder is broken and its staged files removed", held: "a", heldFor: time.Minute,
			heldStaged: []string{swapKubelet + ".swdt-new-a"}, age: 2 * time.Minute,
			req: ops.NodeLockRequest{Owner: lockOwner("b"), StaleAfterMs: 60000, Destinations: []string{swapKubelet}},
			want: ops.NodeLockResponse{Acquired: true, Broken: &ops.LockHolder{Owner: lockOwner("a"), StaleAfterMs: 60000, Staged: []string{swapKubelet + ".swdt-new-a"}},
				Removed: []string{swapKubelet + ".swdt-new-a"}},
			wantHolder: "b"},
		{name: "a stale holder's list removes only its staged files beside this node file's binaries", held: "a", heldFor: time.Minute,
			heldStaged: []string{`C:\Windows\System32\whoami.exe`, `C:\k\kube-proxy.exe.swdt-new-a`, swapKubelet + ".swdt-new-x", swapKubelet + ".swdt-new-a"},
			age:        2 * time.Minute,
			req:        ops.NodeLockRequest{Owner: lockOwner("b"), StaleAfterMs: 60000, Destinations: []string{swapKubelet}},
			want: ops.NodeLockResponse{Acquired: true, Broken: &ops.LockHolder{Owner: lockOwner("a"), StaleAfterMs: 60000,
				Staged: []string{`C:\Windows\System32\whoami.exe`, `C:\k\kube-proxy.exe.swdt-new-a`, swapKubelet + ".swdt-new-x", swapKubelet + ".swdt-new-a"}},
				Removed: []string{swapKubelet + ".swdt-new-a"}},
			wantHolder: "b"},
		{name: "a holder the caller knows dead is broken", held: "a", heldFor: time.Minute,
			req:  ops.NodeLockRequest{Owner: lockOwner("b"), StaleAfterMs: 60000, Break: "a"},
			want: ops.NodeLockResponse{Acquired: true, Broken: &ops.LockHolder{Owner: lockOwner("a"), StaleAfterMs: 60000}}, wantHolder: "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			if tt.held != "" {
				lockTake(t, ts, tt.held, tt.heldFor)
				for _, p := range tt.heldStaged {
					if err := n.WriteFile(p, []byte("staged")); err != nil {
						t.Fatal(err)
					}
				}
				if tt.heldStaged != nil {
					if _, err := provCall(t, ts, ops.NodeLockRenew, ops.NodeLockRenewRequest{RunID: tt.held, Staged: tt.heldStaged}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tt.age > 0 {
				if err := n.SetModTime(ops.LockPath, time.Now().Add(-tt.age)); err != nil {
					t.Fatal(err)
				}
			}
			got, err := lockVia(t, ts, tt.req)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range []*ops.LockHolder{got.Holder, got.Broken} {
				if h != nil {
					h.AgeMs = 0
				}
			}
			if g, w := lockJSON(got), lockJSON(tt.want); g != w {
				t.Errorf("response\n got %s\nwant %s", g, w)
			}
			for _, p := range tt.heldStaged {
				if removed := slices.Contains(tt.want.Removed, p); n.Exists(p) == removed {
					t.Errorf("%s: exists %v, want %v", p, n.Exists(p), !removed)
				}
			}
			resp, err := provCall(t, ts, ops.ProvisionInspect, ops.ProvisionInspectRequest{})
			if err != nil || resp.Lock == nil || resp.Lock.Owner.RunID != tt.wantHolder {
				t.Errorf("holder afterwards: %+v, %v; want %s", resp.Lock, err, tt.wantHolder)
			}
		})
	}
}

func lockJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Only the holder renews or releases the lock.
func TestNodeLockRenewAndUnlock(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	lockTake(t, ts, "a", time.Minute)
	_, err := provCall(t, ts, ops.NodeLockRenew, ops.NodeLockRenewRequest{RunID: "b"})
	if kind, msg := provFailure(t, err); kind != ops.KindLockLost || !strings.Contains(msg, "run a") {
		t.Errorf("renew by another run: %s %q", kind, msg)
	}
	if resp, err := provCall(t, ts, ops.NodeUnlock, ops.NodeUnlockRequest{RunID: "b"}); err != nil || resp.Released {
		t.Errorf("unlock by another run: %+v, %v", resp, err)
	}
	if _, err := provCall(t, ts, ops.NodeLockRenew, ops.NodeLockRenewRequest{RunID: "a"}); err != nil {
		t.Errorf("renew by the holder: %v", err)
	}
	if resp, err := provCall(t, ts, ops.NodeUnlock, ops.NodeUnlockRequest{RunID: "a"}); err != nil || !resp.Released {
		t.Errorf("unlock by the holder: %+v, %v", resp, err)
	}
	if ts.Node().Exists(ops.LockPath) {
		t.Error("the lock file is still there")
	}
}

// A swap refuses, nothing stopped, while another run holds the lock.
func TestServiceSwapRefusedWhileLocked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		owner    ops.LockOwner
		wantKind ops.Kind
	}{
		{"another locked run", lockOwner("b"), "lock-lost"},
		{"a swap outside a locked run", ops.LockOwner{}, "locked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			lockTake(t, ts, "a", time.Minute)
			before, _ := n.Service("kubelet")
			req := swapKubeletRequest(swapStage(t, n, "kubelet", swapKubelet, []byte("MZ new")))
			req.Owner = tt.owner
			_, err := agent.Call(context.Background(), n.OS(), ops.ServiceSwap, req)
			if kind, msg := provFailure(t, err); kind != tt.wantKind || !strings.Contains(msg, "nothing was stopped") {
				t.Errorf("failure %s %q", kind, msg)
			}
			if after, _ := n.Service("kubelet"); after.PID != before.PID {
				t.Error("kubelet was restarted")
			}
		})
	}
}

// The swap checks each staged file's digest again before it stops
// anything: a file another run overwrote since swdt verified it fails its
// item, and no service is stopped for it alone.
func TestServiceSwapReverifiesStagedFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// changed lists the services whose staged file is overwritten.
		changed     []string
		wantResults map[string]string
		// wantRestarted lists the services stopped and started again.
		wantRestarted []string
	}{
		{name: "the only item changed: nothing stops", changed: []string{"kubelet"},
			wantResults: map[string]string{"kubelet": ops.SwapResultFailed}},
		{name: "one of two changed: only the other's services stop", changed: []string{"kubelet"},
			wantResults:   map[string]string{"kubelet": ops.SwapResultFailed, "kube-proxy": ops.SwapResultSwapped},
			wantRestarted: []string{"kube-proxy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			var items []ops.SwapItem
			for svc := range tt.wantResults {
				dest := `C:\k\` + svc + ".exe"
				it := swapStage(t, n, svc, dest, []byte("MZ "+svc+" from run A"))
				if strings.Contains(strings.Join(tt.changed, ","), svc) {
					if err := n.WriteFile(it.Staged, []byte("MZ "+svc+" from run B")); err != nil {
						t.Fatal(err)
					}
				}
				items = append(items, it)
			}
			pids := map[string]int{}
			for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
				svc, _ := n.Service(name)
				pids[name] = svc.PID
			}
			req := swapRequest(items...)
			resp, err := agent.Call(context.Background(), n.OS(), ops.ServiceSwap, req)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range resp.Items {
				if r.Result != tt.wantResults[r.Service] {
					t.Errorf("%s: %s (%s), want %s", r.Service, r.Result, r.Error, tt.wantResults[r.Service])
				}
				if r.Result == ops.SwapResultFailed && !strings.Contains(r.Error, "changed since swdt verified it") {
					t.Errorf("%s: error %q", r.Service, r.Error)
				}
				if r.Result == ops.SwapResultFailed && !strings.Contains(r.Error, "the upload was corrupted") {
					t.Errorf("%s: error %q does not say the upload may be corrupted", r.Service, r.Error)
				}
			}
			for _, it := range items {
				if tt.wantResults[it.Service] == ops.SwapResultFailed && n.Exists(it.Staged) {
					t.Errorf("the staged file %s that failed its check was kept", it.Staged)
				}
			}
			if b, _ := n.ReadFile(swapKubelet); strings.Contains(string(b), "run B") || strings.Contains(string(b), "run A") {
				t.Errorf("kubelet.exe holds %q", b)
			}
			for name, pid := range pids {
				svc, _ := n.Service(name)
				restarted := svc.PID != pid
				if restarted != strings.Contains(strings.Join(tt.wantRestarted, ","), name) {
					t.Errorf("%s restarted = %v", name, restarted)
				}
			}
			if n.Exists(ops.JournalPath) {
				t.Error("the journal was left behind")
			}
		})
	}
}
