package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// join-write writes only its fixed files, each admin-only, and only when
// the content differs; join-inspect reports them and the kubelet's
// kubeconfig; join-reset removes the service and every file.
func TestJoinOps(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Bare = true }))
	n, w := ts.Node(), ts.Node().OS()
	ctx := context.Background()

	if _, err := agent.Call(ctx, w, ops.JoinWrite, ops.JoinWriteRequest{Files: map[ops.JoinFile]string{"../../evil": "x"}}); !errors.Is(err, ops.KindBadRequest) {
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

// noDescriptorsOS plays a system that keeps no security descriptors
// (Wine): every file belongs to the account that created it, setting an
// owner or a DACL succeeds and changes nothing, and every DACL reads as
// full control for everyone.
type noDescriptorsOS struct {
	winos.OS
	sid string
}

func (o noDescriptorsOS) Owner(p string) (string, error) {
	if _, err := o.OS.Owner(p); err != nil {
		return "", err
	}
	return o.sid, nil
}

func (o noDescriptorsOS) SetOwner(p, _ string) error {
	_, err := o.OS.Owner(p)
	return err
}

func (o noDescriptorsOS) ACL(p string) (winos.ACL, error) {
	if _, err := o.OS.ACL(p); err != nil {
		return winos.ACL{}, err
	}
	return winos.ACL{Entries: []winos.ACE{{SID: winos.SIDEveryone, Mask: winos.FileAllAccess}}}, nil
}

func (o noDescriptorsOS) SetACL(p string, _ winos.ACL) error {
	_, err := o.OS.ACL(p)
	return err
}

func (o noDescriptorsOS) CurrentUser() (winos.User, error) {
	u, err := o.OS.CurrentUser()
	u.Owner, u.SID = o.sid, o.sid
	return u, err
}

// The folders a join writes the kubelet's credentials in are checked as
// the agent's footprint is: one a non-administrator made (C:\ lets any
// user create folders) is refused before anything is written; one an
// administrator made with Windows' defaults (others may add files) is
// given to Administrators and SYSTEM alone, and what another account left
// at the join's and the kubelet's file names is removed unread; a folder
// above that lets others replace what it holds is refused.
func TestJoinWriteFolders(t *testing.T) {
	t.Parallel()
	files := map[ops.JoinFile]string{ops.JoinFileCA: "CA", ops.JoinFileBootstrapKubeconfig: "token", ops.JoinFileKubeletConfig: "kind: KubeletConfiguration\n"}
	tests := []struct {
		name string
		// prepare plays the node's history, as the administrator (n)
		// and as mallory (m).
		prepare     func(t *testing.T, n, m *simnode.Node)
		os          func(w winos.OS) winos.OS
		wantUnsafe  []string // inspect's Unsafe, by prefix
		wantIgnored int
		wantErr     string
		wantNotes   []string // substrings of join-write's notes
		wantGone    []string // plants join-write removed
	}{
		{name: "a non-administrator made C:\\etc\\kubernetes", prepare: func(t *testing.T, _, m *simnode.Node) {
			must(t, m.MkdirAll(`C:\etc\kubernetes`))
			must(t, m.WriteFile(`C:\etc\kubernetes\bootstrap-kubelet.conf`, []byte("planted")))
		}, wantUnsafe: []string{`C:\etc\kubernetes is owned by mallory`},
			wantErr: `C:\etc\kubernetes is owned by mallory, who may change what swdt puts below it: as an administrator, look at what it holds and delete it (rmdir /s /q C:\etc\kubernetes)`},
		{name: "a non-administrator made the kubelet's certificate folder", prepare: func(t *testing.T, n, m *simnode.Node) {
			must(t, n.MkdirAll(`C:\var\lib\kubelet`))
			must(t, m.MkdirAll(ops.JoinCertDir))
		}, wantUnsafe: []string{ops.JoinCertDir + ` is owned by mallory`}, wantErr: "unsafe-folder"},
		{name: "an administrator's folders with Windows' defaults, and plants in them", prepare: func(t *testing.T, n, m *simnode.Node) {
			must(t, n.MkdirAll(`C:\etc\kubernetes`))
			must(t, n.MkdirAll(ops.JoinCertDir))
			for _, p := range []string{ops.JoinKubeconfig, ops.JoinBootstrapKubeconfig + ".swdt-new", ops.JoinCertDir + `\kubelet.key`} {
				must(t, m.WriteFile(p, []byte("apiVersion: v1\nplanted: true\n")))
			}
		}, wantIgnored: 1,
			wantNotes: []string{`C:\etc\kubernetes was not safe (it inherits its parent's permissions)`, `removed C:\etc\kubernetes\kubelet.conf unread: it is owned by mallory`},
			wantGone:  []string{ops.JoinKubeconfig, ops.JoinCertDir + `\kubelet.key`}},
		{name: "a folder above lets others replace what it holds", prepare: func(t *testing.T, n, _ *simnode.Node) {
			must(t, n.MkdirAll(`C:\var\lib`))
			must(t, n.OS().SetACL(`C:\var`, winos.ACL{Entries: []winos.ACE{{SID: winos.SIDUsers, Mask: winos.FileAllAccess, Inherit: true}}}))
		}, wantErr: `C:\var lets S-1-5-32-545 delete, rename or re-permission what it holds, and so replace C:\var\lib\kubelet`},
		{name: "a system that keeps no security descriptors", os: func(w winos.OS) winos.OS {
			return noDescriptorsOS{OS: w, sid: "S-1-5-21-1-2-3-1000"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Bare = true }), simnode.WithAccount(simnode.Account{Name: "mallory"}))
			n := ts.Node()
			m, err := ts.NodeAs("mallory")
			must(t, err)
			if tt.prepare != nil {
				tt.prepare(t, n, m)
			}
			w := n.OS()
			if tt.os != nil {
				w = tt.os(w)
			}
			ctx := context.Background()
			ins, err := agent.Call(ctx, w, ops.JoinInspect, ops.JoinInspectRequest{})
			must(t, err)
			if len(ins.Unsafe) != len(tt.wantUnsafe) || len(ins.Ignored) != tt.wantIgnored || ins.Kubeconfig != "" {
				t.Fatalf("inspect: unsafe %q, ignored %q, kubeconfig %q; want unsafe %q and %d ignored", ins.Unsafe, ins.Ignored, ins.Kubeconfig, tt.wantUnsafe, tt.wantIgnored)
			}
			for i, want := range tt.wantUnsafe {
				if !strings.HasPrefix(ins.Unsafe[i], want) {
					t.Errorf("inspect: unsafe[%d] = %q, want %q...", i, ins.Unsafe[i], want)
				}
			}
			resp, err := agent.Call(ctx, w, ops.JoinWrite, ops.JoinWriteRequest{Files: files})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "nothing was written") {
					t.Fatalf("join-write: %v; want an error saying %q and nothing was written", err, tt.wantErr)
				}
				if got, _ := n.ReadFile(ops.JoinBootstrapKubeconfig); string(got) == "token" {
					t.Error("the refused join-write wrote the bootstrap kubeconfig")
				}
				return
			}
			must(t, err)
			for _, want := range tt.wantNotes {
				if !slices.ContainsFunc(resp.Notes, func(s string) bool { return strings.Contains(s, want) }) {
					t.Errorf("notes %q lack %q", resp.Notes, want)
				}
			}
			for _, p := range tt.wantGone {
				if n.Exists(p) {
					t.Errorf("%s, planted by mallory, is still there", p)
				}
			}
			for role, content := range files {
				p := ops.JoinFilePaths[role]
				if got, _ := n.ReadFile(p); string(got) != content {
					t.Errorf("%s = %q, want %q", p, got, content)
				}
				if owner, _ := n.Owner(p); tt.os == nil && owner != simnode.AccountAdministrators {
					t.Errorf("%s belongs to %s", p, owner)
				}
			}
			if tt.os != nil {
				return
			}
			for _, d := range []string{`C:\etc\kubernetes`, `C:\etc\kubernetes\pki`, `C:\var\lib\kubelet`, ops.JoinCertDir} {
				if err := m.WriteFile(d+`\planted-later`, []byte("x")); err == nil {
					t.Errorf("mallory may still create files in %s", d)
				}
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// lingeringOS plays Windows reporting a service Stopped before its
// process has exited: once service name first reads Stopped, its process
// proc stays listed for linger, and a remove of its binary meanwhile is
// refused (a sharing violation) and noted in early.
type lingeringOS struct {
	winos.OS
	name   string
	proc   winos.Process
	linger time.Duration

	mu        sync.Mutex
	stoppedAt time.Time
	early     []string
}

func (o *lingeringOS) Service(name string) (winos.Service, error) {
	svc, err := o.OS.Service(name)
	if err == nil && strings.EqualFold(name, o.name) && svc.Status == winos.StatusStopped {
		o.mu.Lock()
		if o.stoppedAt.IsZero() {
			o.stoppedAt = time.Now()
		}
		o.mu.Unlock()
	}
	return svc, err
}

// lingers reports whether the process still runs after its service
// stopped.
func (o *lingeringOS) lingers() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.stoppedAt.IsZero() && time.Since(o.stoppedAt) < o.linger
}

func (o *lingeringOS) Processes() ([]winos.Process, error) {
	procs, err := o.OS.Processes()
	if err == nil && o.lingers() {
		procs = append(procs, o.proc)
	}
	return procs, err
}

func (o *lingeringOS) Remove(p string) error {
	if strings.EqualFold(p, o.proc.Path) && o.lingers() {
		o.mu.Lock()
		o.early = append(o.early, p)
		o.mu.Unlock()
		return &winos.Error{Op: "remove", Target: p, Code: winos.ErrSharingViolation, Message: "The process cannot access the file because it is being used by another process."}
	}
	return o.OS.Remove(p)
}

// join-reset removes a service's binary only once the service's process
// has exited: Windows reports Stopped first, and the binary stays locked
// until the process is gone.
func TestJoinResetWaitsForTheProcessToExit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		linger time.Duration
	}{
		{name: "process exits with the stop"},
		{name: "process outlives the stop", linger: 700 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Bare = true }))
			n := ts.Node()
			ctx := context.Background()
			const binary = `C:\k\kubelet.exe`
			if err := n.MkdirAll(`C:\k`); err != nil {
				t.Fatal(err)
			}
			if err := n.WriteFile(binary, []byte("MZ kubelet")); err != nil {
				t.Fatal(err)
			}
			if _, err := agent.Call(ctx, n.OS(), ops.ServiceRegister, ops.ServiceRegisterRequest{Name: "kubelet", Program: binary}); err != nil {
				t.Fatal(err)
			}
			if err := n.StartService("kubelet"); err != nil {
				t.Fatal(err)
			}
			svc, err := n.WaitService(ctx, "kubelet", simnode.StatusRunning, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			w := &lingeringOS{OS: n.OS(), name: "kubelet", linger: tt.linger}
			procs, err := n.OS().Processes()
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range procs {
				if p.PID == svc.PID {
					w.proc = p
				}
			}
			if w.proc.PID == 0 {
				t.Fatalf("no process %d for the kubelet in %+v", svc.PID, procs)
			}

			resp, err := agent.Call(ctx, w, ops.JoinReset, ops.JoinResetRequest{Services: []ops.JoinService{{Name: "kubelet", Binary: binary}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(w.early) > 0 {
				t.Errorf("%s was removed while the kubelet's process %d still ran", binary, w.proc.PID)
			}
			if !slices.Contains(resp.Removed, binary) || n.Exists(binary) {
				t.Errorf("%s not removed: %+v", binary, resp)
			}
		})
	}
}
