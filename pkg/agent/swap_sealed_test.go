package agent_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/delta"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// watchedOS is the node's Windows layer, counting the opens for reading
// of one file and calling tamper at the swap's first stop.
type watchedOS struct {
	winos.OS
	path   string
	tamper func()

	mu      sync.Mutex
	opens   int
	stopped bool
}

func (w *watchedOS) Open(p string) (winos.File, error) {
	w.mu.Lock()
	if strings.EqualFold(p, w.path) {
		w.opens++
	}
	w.mu.Unlock()
	return w.OS.Open(p)
}

func (w *watchedOS) StopService(name string) error {
	w.mu.Lock()
	first := !w.stopped
	w.stopped = true
	w.mu.Unlock()
	if first && w.tamper != nil {
		w.tamper()
	}
	return w.OS.StopService(name)
}

// A patch the swap decodes is hashed as it is written; it is not hashed
// again before its rename when only administrators could have changed it
// since (another account's write is refused: the swap made the folder
// safe first), and is hashed again, a change caught, where the folder
// lets others change it and is one swdt leaves as it is (the system's
// own, which TrustedInstaller owns).
func TestDecodedStagedFileIsSealed(t *testing.T) {
	t.Parallel()
	const runID = "run1"
	staged := swapKubelet + ".swdt-new-" + runID
	tests := []struct {
		name string
		// usersModify gives Users modify rights on C:\k, passed on to
		// its files; system makes C:\k TrustedInstaller's, which the swap
		// leaves as it is (else it makes the folder safe first).
		usersModify, system bool
		// tamper has mallory rewrite the staged file at the first stop.
		tamper    bool
		wantOpens int
		// wantError is the item's error ("": swapped, with the decoded
		// bytes).
		wantError string
	}{
		{name: "nobody else can change it: swapped without a second hash"},
		{name: "another account's write is refused: swapped without a second hash", tamper: true},
		{name: "a folder where users may change files is made safe first: swapped without a second hash", usersModify: true, tamper: true},
		{name: "the system's folder where users may change files: hashed again", usersModify: true, system: true, wantOpens: 1},
		{name: "the system's folder where users may change files: a change is caught", usersModify: true, system: true, tamper: true, wantOpens: 1,
			wantError: "has SHA-256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
			n := ts.Node()
			if tt.usersModify {
				acl := &simnode.ACL{Entries: []simnode.ACE{{Identity: simnode.AccountUsers, Rights: "M", ObjectInherit: true, ContainerInherit: true}}}
				if err := n.SetACL(`C:\k`, acl); err != nil {
					t.Fatal(err)
				}
			}
			if tt.system {
				if err := n.SetOwner(`C:\k`, simnode.AccountTrustedInstaller); err != nil {
					t.Fatal(err)
				}
			}
			old, nw, it := rebuiltKubeletPatch(t, n, staged)
			w := &watchedOS{OS: n.OS(), path: staged}
			var refused error
			if tt.tamper {
				sc := ts.SFTP("mallory")
				w.tamper = func() {
					f, err := sc.OpenFile("/"+strings.ReplaceAll(staged, `\`, "/"), os.O_WRONLY)
					if err == nil {
						_, err = f.Write(bytes.ToUpper(nw[:8]))
						if cerr := f.Close(); err == nil {
							err = cerr
						}
					}
					refused = err
				}
			}
			lockTake(t, ts, runID, time.Minute)
			req := swapKubeletRequest(it)
			req.Owner, req.Unlock = lockOwner(runID), true
			resp, err := agent.Call(context.Background(), w, ops.ServiceSwap, req)
			if err != nil {
				t.Fatal(err)
			}
			if tt.tamper && !w.stopped {
				t.Fatal("the swap stopped no service")
			}
			if lax := tt.usersModify && tt.system; tt.tamper && lax != (refused == nil) {
				t.Fatalf("mallory's write: %v, want refused %v", refused, !lax)
			}
			if refused != nil && !errors.Is(refused, os.ErrPermission) && !strings.Contains(strings.ToLower(refused.Error()), "denied") {
				t.Errorf("mallory's write failed with %v, want access denied", refused)
			}
			if w.opens != tt.wantOpens {
				t.Errorf("the staged file was opened %d times after it was decoded, want %d", w.opens, tt.wantOpens)
			}
			got, _ := n.ReadFile(swapKubelet)
			if len(resp.Items) != 1 {
				t.Fatalf("items %+v, want one", resp.Items)
			}
			if tt.wantError == "" {
				if resp.Items[0].Result != ops.SwapResultSwapped || !bytes.Equal(got, nw) {
					t.Fatalf("items %+v, destination holds the decoded binary: %v", resp.Items, bytes.Equal(got, nw))
				}
				return
			}
			if resp.Items[0].Result != ops.SwapResultFailed || !strings.Contains(resp.Items[0].Error, tt.wantError) {
				t.Fatalf("items %+v, want failed with %q", resp.Items, tt.wantError)
			}
			if !bytes.Equal(got, old) {
				t.Error("the destination changed although its item failed")
			}
			swapAllRunning(t, n)
		})
	}
}

// rebuiltKubeletPatch returns the node's kubelet.exe, a rebuild of it,
// and a swap item that sends the rebuild as a patch against it, inline in
// the request.
func rebuiltKubeletPatch(t *testing.T, n *simnode.Node, staged string) (old, nw []byte, it ops.SwapItem) {
	t.Helper()
	old, err := n.ReadFile(swapKubelet)
	if err != nil {
		t.Fatal(err)
	}
	nw = append(bytes.Clone(old), []byte(" and a rebuilt function")...)
	var patch bytes.Buffer
	if _, err := delta.Diff(context.Background(), &patch, bytes.NewReader(old), int64(len(old)), "", bytes.NewReader(nw)); err != nil {
		t.Fatal(err)
	}
	return old, nw, ops.SwapItem{Service: "kubelet", Destination: swapKubelet, Staged: staged, Backup: swapKubelet + ".swdt-bak",
		SHA256: provSum(nw), Size: int64(len(nw)), Encoded: staged + ".swdt-zst", Encoding: ops.EncodingPatch,
		Reference: swapKubelet, Fallback: true, Data: patch.Bytes()}
}
