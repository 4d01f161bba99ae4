package simnode

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/winos"
)

// rebootNow reboots the machine (shutdown.exe /r /t 0) and waits until
// it has gone down once more than before.
func rebootNow(t *testing.T, n *Node) {
	t.Helper()
	boots := len(n.Boots())
	n.ScheduleRestart(0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for len(n.Boots()) == boots {
		if err := n.Sleep(ctx, 5*time.Millisecond); err != nil {
			t.Fatal("the machine did not reboot")
		}
	}
}

// A fresh Windows Server has the Containers feature Available and
// neither vmcompute nor hns; installing it asks for a reboot, and the
// boot after it brings both services, Running. Firewall rules are
// created and removed by name. A service that fails to start at boot is
// in the event log only when its ErrorControl is not Ignore.
func TestFreshServerContainersFeature(t *testing.T) {
	ts := StartTest(t, WithOptions(func(o *Options) { o.Bare = true }),
		WithDelays(Delays{ServiceStart: 10 * time.Millisecond, ServiceStop: 10 * time.Millisecond, ShutdownGrace: 10 * time.Millisecond, Boot: 50 * time.Millisecond}))
	n := ts.Node()
	w := n.OS()
	ctx := context.Background()
	exists := func(name string) bool { _, err := n.Service(name); return err == nil }
	if st, err := w.WindowsFeature(ctx, "Containers"); err != nil || st != winos.FeatureAvailable || exists("vmcompute") || exists("hns") {
		t.Fatalf("fresh: Containers %q (%v), vmcompute %v, hns %v; want Available and neither service", st, err, exists("vmcompute"), exists("hns"))
	}
	if _, err := w.WindowsFeature(ctx, "NoSuchFeature"); err == nil {
		t.Error("an unknown feature was read")
	}
	for i := range 2 {
		if st, err := w.InstallWindowsFeature(ctx, "Containers"); err != nil || st != winos.FeatureInstallPending {
			t.Fatalf("install %d: %q, %v; want InstallPending", i, st, err)
		}
	}
	if exists("vmcompute") || exists("hns") {
		t.Fatal("vmcompute or hns exist before the reboot")
	}
	for _, ec := range []string{ErrorControlIgnore, ErrorControlNormal} {
		if err := n.CreateService(ServiceConfig{Name: "missing-" + ec, BinaryPath: `C:\missing\` + ec + `.exe`, StartType: StartAutomatic, ErrorControl: ec}); err != nil {
			t.Fatal(err)
		}
	}
	rebootNow(t, n)
	for _, name := range []string{"vmcompute", "hns"} {
		waitStatus(t, n, name, StatusRunning)
	}
	if st, err := w.WindowsFeature(ctx, "Containers"); err != nil || st != winos.FeatureInstalled {
		t.Errorf("after the reboot: Containers %q, %v; want Installed", st, err)
	}
	for ec, logged := range map[string]bool{ErrorControlIgnore: false, ErrorControlNormal: true} {
		svc, _ := n.Service("missing-" + ec)
		if got := slices.ContainsFunc(svc.EventLog, func(s string) bool { return strings.Contains(s, "failed to start") }); got != logged {
			t.Errorf("ErrorControl %s: boot failure logged %v, want %v (%q)", ec, got, logged, svc.EventLog)
		}
	}

	rule := winos.FirewallRuleSpec{Name: "swdt-test-In-TCP", DisplayName: "test", Direction: "Inbound", Protocol: "TCP", LocalPort: 10250}
	if err := w.CreateFirewallRule(ctx, rule); err != nil {
		t.Fatal(err)
	}
	if err := w.CreateFirewallRule(ctx, rule); err == nil {
		t.Error("a second rule of the same name was created")
	}
	if r, ok := n.FirewallRule(rule.Name); !ok || !r.Enabled || r.LocalPort != "10250" || r.Direction != "Inbound" {
		t.Errorf("rule %+v, %v", r, ok)
	}
	for i, want := range [][]string{{rule.Name}, {}} {
		if got, err := w.RemoveFirewallRules(ctx, []string{rule.Name}); err != nil || !slices.Equal(got, want) {
			t.Errorf("remove %d: %q, %v; want %q", i, got, err, want)
		}
	}
}

// containerd reports Running before it opens its pipe: at boot, a
// kubelet whose runtime endpoint is that pipe starts, finds no runtime
// and exits. Only restart actions bring it back. The test drives the
// machine's clock.
func TestKubeletAtBootBeforeContainerdsPipe(t *testing.T) {
	tests := []struct {
		name     string
		recovery *Recovery
		want     ServiceStatus
	}{
		{"no restart actions", nil, StatusStopped},
		{"restart actions", &Recovery{Actions: []RecoveryAction{{Type: "restart", Delay: 10 * time.Second}, {Type: "restart", Delay: 15 * time.Second}}, ResetPeriod: 24 * time.Hour}, StatusRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := StartTest(t, WithDelays(Delays{ServiceStart: 10 * time.Millisecond, ServiceStop: 10 * time.Millisecond, CrashAfter: 100 * time.Millisecond,
				ShutdownGrace: 10 * time.Millisecond, Boot: 50 * time.Millisecond}))
			n := ts.Node()
			if err := n.ConfigureService("kubelet", func(c *ServiceConfig) {
				c.Args = append(c.Args, "--container-runtime-endpoint=npipe:////./pipe/containerd-containerd")
			}); err != nil {
				t.Fatal(err)
			}
			if err := n.SetServiceRecovery("kubelet", tt.recovery); err != nil {
				t.Fatal(err)
			}
			if err := n.Update(func(s *State) error {
				s.PipeDelays = map[string]time.Duration{"containerd": 3 * time.Second}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			base := time.Now()
			var offset atomic.Int64
			n.SetClock(func() time.Time { return base.Add(time.Duration(offset.Load())) })
			at := func(d time.Duration) *State { offset.Store(int64(d)); return n.Snapshot() }
			rebootNow(t, n)
			if s := at(time.Second); s.Services["kubelet"].Status != StatusStopped || n.PipeExists("containerd-containerd") {
				t.Fatalf("1s after boot: kubelet %s, pipe %v; want the kubelet exited and no pipe yet", s.Services["kubelet"].Status, n.PipeExists("containerd-containerd"))
			}
			if s := at(5 * time.Second); s.Services["containerd"].Status != StatusRunning || !n.PipeExists("containerd-containerd") {
				t.Fatalf("5s after boot: containerd %s, pipe %v", s.Services["containerd"].Status, n.PipeExists("containerd-containerd"))
			}
			at(12 * time.Second)
			s := at(13 * time.Second)
			kubelet := s.Services["kubelet"]
			if kubelet.Status != tt.want || !slices.ContainsFunc(kubelet.EventLog, func(e string) bool { return strings.Contains(e, "terminated unexpectedly") }) {
				t.Errorf("13s after boot: kubelet %s (events %q); want %s after one unexpected exit", kubelet.Status, kubelet.EventLog, tt.want)
			}
		})
	}
}
