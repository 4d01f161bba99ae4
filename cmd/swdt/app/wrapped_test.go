package app

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// kubelet as real nodes install it (issue 22, items 1 and 2): by sc.exe,
// by nssm, and by PrepareNode.ps1's nssm + powershell.exe +
// StartKubelet.ps1. swdt swaps it each way, status says in sync and how
// the service runs it, and no old kubelet.exe runs on, also when the
// service has to be killed (TerminateProcess ends only nssm).
func TestKubernetesSwapsKubeletHoweverInstalled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		setup simnode.KubeletSetup
		via   string
		hang  bool
	}{
		{simnode.KubeletSC, "directly", false},
		{simnode.KubeletNSSM, "through nssm", false},
		{simnode.KubeletNSSMPowerShell, "through nssm + PowerShell", false},
		{simnode.KubeletSC, "directly", true},
		{simnode.KubeletNSSM, "through nssm", true},
		{simnode.KubeletNSSMPowerShell, "through nssm + PowerShell", true},
	} {
		name := string(tc.setup)
		if tc.hang {
			name += "/hangs on stop"
		}
		t.Run(name, func(t *testing.T) {
			fx := newKubeFixture(t, simnode.WithKubeletSetup(tc.setup))
			want := "MZ kubelet v2\n"
			if tc.hang {
				fx.writeSource("kubelet", "MZ kubelet v2 SIMNODE-HANG-ON-STOP\n")
				if code, _, errOut := fx.run(context.Background(), "--only", "kubelet"); code != exitcode.OK {
					t.Fatalf("install the hanging kubelet: exit %d\n%s", code, errOut)
				}
				want = "MZ kubelet v3\n"
				fx.writeSource("kubelet", want)
			}
			code, doc, errOut := fx.runJSON("--only", "kubelet")
			if code != exitcode.OK {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			if k := actions(doc)["kubelet"]; k.Action != "updated" || tc.hang != strings.Contains(k.Detail, "killed") {
				t.Errorf("kubelet = %+v", k)
			}
			if got := fx.content(kubeletExe); got != want {
				t.Errorf("kubelet.exe holds %q", got)
			}
			assertOneKubelet(t, fx.ts.Node())

			var outb, errb bytes.Buffer
			code = Run(context.Background(), Streams{In: strings.NewReader(""), Out: &outb, ErrOut: &errb}, []string{"status", "-c", fx.config, "-o", "json"})
			out, errOut := outb.String(), errb.String()
			if code != exitcode.OK {
				t.Fatalf("status: exit %d\n%s", code, errOut)
			}
			var st struct {
				Nodes []struct {
					Binaries []struct{ Name, Source, RunsVia string }
				}
			}
			if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Nodes) != 1 {
				t.Fatalf("status JSON (%v):\n%s", err, out)
			}
			seen := false
			for _, b := range st.Nodes[0].Binaries {
				if b.Name != "kubelet" {
					continue
				}
				seen = true
				if b.Source != "in-sync" || b.RunsVia != tc.via {
					t.Errorf("status of kubelet = %+v, want in sync, %s", b, tc.via)
				}
			}
			if !seen {
				t.Errorf("status lists no kubelet:\n%s", out)
			}
		})
	}
}

// assertOneKubelet checks that exactly one kubelet.exe runs, from
// C:\k\kubelet.exe, and that it belongs to the kubelet service: no old
// kubelet (renamed to a backup, or orphaned by a killed wrapper) runs on.
func assertOneKubelet(t *testing.T, n *simnode.Node) {
	t.Helper()
	svc, err := n.WaitService(context.Background(), "kubelet", simnode.StatusRunning, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	procs := map[int]simnode.Process{}
	for _, p := range n.Processes() {
		procs[p.PID] = p
	}
	found := 0
	for _, p := range procs {
		base := strings.ToLower(p.Image[strings.LastIndex(p.Image, `\`)+1:])
		if !strings.HasPrefix(base, "kubelet.exe") {
			continue
		}
		found++
		if !strings.EqualFold(p.Image, kubeletExe) {
			t.Errorf("process %d runs %s", p.PID, p.Image)
			continue
		}
		if !inServiceTree(n, p, svc.PID) {
			t.Errorf("kubelet.exe process %d (parent %d) does not run below the kubelet service's process %d", p.PID, p.Parent, svc.PID)
		}
	}
	if found != 1 {
		t.Errorf("%d kubelet.exe processes run, want 1: %+v", found, procs)
	}
}

// inServiceTree reports whether p is the service process pid or runs
// below it (a wrapper's program).
func inServiceTree(n *simnode.Node, p simnode.Process, pid int) bool {
	procs := map[int]simnode.Process{}
	for _, q := range n.Processes() {
		procs[q.PID] = q
	}
	for p.PID != pid && p.Parent != 0 {
		p = procs[p.Parent]
	}
	return p.PID == pid
}
