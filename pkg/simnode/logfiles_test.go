package simnode

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// A service's output reaches a file only the ways SIG Windows nodes set it
// up: kube-log-runner's -log-file (its child's stdout and stderr) and
// containerd's own --log-file. Neither creates the file's folder: without
// it the program exits as it starts.
func TestServiceLogFiles(t *testing.T) {
	const runner = `C:\k\kube-log-runner.exe`
	tests := []struct {
		name     string
		service  string
		binary   string
		args     []string
		folder   string // made before the start ("" none)
		wantRuns bool
		wantLog  string // a line the log file must hold ("" no file)
		wantFile string
	}{
		{name: "kube-log-runner runs the kubelet, its output in the file", service: "kubelet", binary: runner,
			args:   []string{`-log-file=C:\var\log\kubelet\kubelet.log`, `C:\k\kubelet.exe`, "--windows-service"},
			folder: `C:\var\log\kubelet`, wantRuns: true, wantFile: `C:\var\log\kubelet\kubelet.log`},
		{name: "kube-log-runner without the log's folder exits", service: "kubelet", binary: runner,
			args: []string{"-log-file", `C:\var\log\kubelet\kubelet.log`, `C:\k\kubelet.exe`, "--windows-service"}},
		{name: "containerd --log-file", service: "containerd", binary: `C:\Program Files\containerd\containerd.exe`,
			args:   []string{"--run-service", "--log-file", `C:\var\log\containerd\containerd.log`},
			folder: `C:\var\log\containerd`, wantRuns: true, wantLog: `msg="starting containerd"`, wantFile: `C:\var\log\containerd\containerd.log`},
		{name: "containerd without the log's folder exits", service: "containerd", binary: `C:\Program Files\containerd\containerd.exe`,
			args: []string{"--run-service", "--log-file", `C:\var\log\containerd\containerd.log`}},
		{name: "a service's stderr goes nowhere", service: "kubelet", binary: `C:\k\kubelet.exe`, args: []string{"--windows-service"},
			folder: `C:\var\log\kubelet`, wantRuns: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := StartTest(t)
			n := ts.Node()
			clock := useTestClock(ts)
			stopAll(t, n)
			if err := n.WriteFile(runner, []byte("MZ kube-log-runner stand-in")); err != nil {
				t.Fatal(err)
			}
			if tt.folder != "" {
				if err := n.MkdirAll(tt.folder); err != nil {
					t.Fatal(err)
				}
			}
			if err := n.ConfigureService(tt.service, func(c *ServiceConfig) { c.BinaryPath, c.Args, c.Dependencies = tt.binary, tt.args, nil }); err != nil {
				t.Fatal(err)
			}
			clock.Freeze()
			if err := n.StartService(tt.service); err != nil {
				t.Fatal(err)
			}
			clock.Add(10 * time.Second)
			clock.Run()
			svc, err := n.Service(tt.service)
			if err != nil {
				t.Fatal(err)
			}
			if runs := svc.Status == StatusRunning; runs != tt.wantRuns {
				t.Fatalf("status %s, want running %v", svc.Status, tt.wantRuns)
			}
			if tt.wantFile == "" {
				for _, f := range []string{`C:\var\log\kubelet\kubelet.log`, `C:\var\log\containerd\containerd.log`} {
					if n.Exists(f) {
						t.Errorf("%s exists", f)
					}
				}
				return
			}
			raw, err := n.ReadFile(tt.wantFile)
			if err != nil || !strings.Contains(string(raw), tt.wantLog) {
				t.Errorf("%s: %v\n%s", tt.wantFile, err, raw)
			}
			if tt.binary != runner {
				return
			}
			// kube-log-runner's child is the kubelet: its image is in use,
			// and a stop ends both.
			procs := n.Processes()
			child := slices.IndexFunc(procs, func(p Process) bool { return p.Parent == svc.PID && strings.EqualFold(p.Image, `C:\k\kubelet.exe`) })
			if child < 0 {
				t.Fatalf("no kubelet.exe below kube-log-runner (pid %d): %+v", svc.PID, procs)
			}
			if err := n.Remove(`C:\k\kubelet.exe`); !errors.Is(err, ErrSharingViolation) {
				t.Errorf("remove the running kubelet.exe: %v", err)
			}
			if err := n.StopService(tt.service); err != nil {
				t.Fatal(err)
			}
			clock.Add(10 * time.Second)
			clock.Run()
			waitStatus(t, n, tt.service, StatusStopped)
			if slices.ContainsFunc(n.Processes(), func(p Process) bool { return p.PID == procs[child].PID }) {
				t.Error("the kubelet outlived its stopped service")
			}
		})
	}
}
