package agent_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

// join-feature reads the Containers feature and installs it once; where
// powershell.exe is a stub (Wine) it says it cannot, and nothing fails.
func TestJoinFeature(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		missing []string
		calls   []ops.JoinFeatureRequest
		want    []ops.JoinFeatureResponse
	}{
		{name: "a fresh Windows Server", calls: []ops.JoinFeatureRequest{{}, {Install: true}, {Install: true}, {}},
			want: []ops.JoinFeatureResponse{{State: "Available"}, {State: "InstallPending", Installed: true}, {State: "InstallPending"}, {State: "InstallPending"}}},
		{name: "a stub powershell.exe", missing: []string{simnode.MissingAPIPowerShell}, calls: []ops.JoinFeatureRequest{{Install: true}},
			want: []ops.JoinFeatureResponse{{NotSupported: "script windows-feature (exit code 0): powershell.exe printed nothing: it is not Windows PowerShell"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Bare = true }))
			must(t, ts.Node().UpdateFaults(func(f *simnode.Faults) { f.MissingAPIs = tt.missing }))
			for i, req := range tt.calls {
				got, err := agent.Call(context.Background(), ts.Node().OS(), ops.JoinFeature, req)
				if err != nil || got != tt.want[i] {
					t.Fatalf("call %d (%+v): %+v, %v; want %+v", i, req, got, err, tt.want[i])
				}
			}
		})
	}
}

// join-setup opens the kubelet's port (and kube-proxy's health port when
// asked) and gives the join's services restart actions and ErrorControl
// Normal, once; join-reset removes the rules. A system whose
// powershell.exe is a stub and that cannot report failure actions (Wine)
// is told, not failed.
func TestJoinSetup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		missing       []string
		req           ops.JoinSetupRequest
		wantRules     []string
		wantServices  []string
		notSupported  []string // prefixes
		wantRecovered bool
	}{
		{name: "a fresh Windows Server", req: ops.JoinSetupRequest{Services: []string{"containerd", "kubelet", "kube-proxy"}},
			wantRules: []string{"swdt-kubelet-In-TCP"}, wantServices: []string{"containerd", "kubelet"}, wantRecovered: true},
		{name: "with kube-proxy", req: ops.JoinSetupRequest{Services: []string{"kubelet"}, KubeProxy: true},
			wantRules: []string{"swdt-kubelet-In-TCP", "swdt-kube-proxy-health-In-TCP"}, wantServices: []string{"kubelet"}, wantRecovered: true},
		{name: "Wine", missing: []string{simnode.MissingAPIPowerShell, simnode.MissingAPIFailureActions},
			req:          ops.JoinSetupRequest{Services: []string{"kubelet"}},
			wantServices: []string{"kubelet"},
			notSupported: []string{"firewall rules: script firewall-rules (exit code 0): powershell.exe printed nothing", "restart actions of kubelet: this system cannot report"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Bare = true }))
			n := ts.Node()
			must(t, n.MkdirAll(`C:\k`))
			for _, name := range []string{"containerd", "kubelet"} {
				must(t, n.WriteFile(`C:\k\`+name+`.exe`, []byte("MZ")))
				must(t, n.CreateService(simnode.ServiceConfig{Name: name, BinaryPath: `C:\k\` + name + `.exe`, StartType: simnode.StartAutomatic}))
			}
			must(t, n.UpdateFaults(func(f *simnode.Faults) { f.MissingAPIs = tt.missing }))
			ctx := context.Background()
			got, err := agent.Call(ctx, n.OS(), ops.JoinSetup, tt.req)
			must(t, err)
			if !slices.Equal(got.Rules, tt.wantRules) || !slices.Equal(got.Services, tt.wantServices) || len(got.NotSupported) != len(tt.notSupported) {
				t.Fatalf("join-setup: %+v; want rules %q, services %q, %d not supported", got, tt.wantRules, tt.wantServices, len(tt.notSupported))
			}
			for i, want := range tt.notSupported {
				if !strings.HasPrefix(got.NotSupported[i], want) {
					t.Errorf("not supported[%d] = %q, want %q...", i, got.NotSupported[i], want)
				}
			}
			for _, name := range tt.wantServices {
				svc, _ := n.Service(name)
				if svc.ErrorControl != simnode.ErrorControlNormal {
					t.Errorf("%s: ErrorControl %q, want Normal", name, svc.ErrorControl)
				}
				wantActions := []simnode.RecoveryAction{{Type: "restart", Delay: 10 * time.Second}, {Type: "restart", Delay: 15 * time.Second}, {Type: "restart", Delay: 15 * time.Second}}
				if got := svc.Recovery != nil && svc.Recovery.ResetPeriod == 24*time.Hour && slices.Equal(svc.Recovery.Actions, wantActions); got != tt.wantRecovered {
					t.Errorf("%s: recovery %+v, want restart actions %v", name, svc.Recovery, tt.wantRecovered)
				}
			}
			for _, r := range tt.wantRules {
				if rule, ok := n.FirewallRule(r); !ok || !rule.Enabled || rule.Direction != "Inbound" || rule.Protocol != "TCP" {
					t.Errorf("rule %s: %+v, %v", r, rule, ok)
				}
			}
			again, err := agent.Call(ctx, n.OS(), ops.JoinSetup, tt.req)
			if err != nil || len(again.Rules) > 0 || len(again.Services) > 0 {
				t.Errorf("second join-setup: %+v, %v; want nothing changed", again, err)
			}
			reset, err := agent.Call(ctx, n.OS(), ops.JoinReset, ops.JoinResetRequest{Services: []ops.JoinService{{Name: "kubelet", Binary: `C:\k\kubelet.exe`}}})
			must(t, err)
			for _, r := range tt.wantRules {
				if _, ok := n.FirewallRule(r); ok || !slices.Contains(reset.Removed, "firewall rule "+r) {
					t.Errorf("after join-reset (removed %q): rule %s is still there", reset.Removed, r)
				}
			}
		})
	}
}

// A rule of the join's name that is off is enabled, not created again.
func TestJoinSetupEnablesItsRule(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Bare = true }))
	n := ts.Node()
	ctx := context.Background()
	must(t, n.OS().CreateFirewallRule(ctx, winos.FirewallRuleSpec{Name: ops.JoinRuleKubelet.Name, DisplayName: "x", Direction: "Inbound", Protocol: "TCP", LocalPort: 10250}))
	must(t, n.SetFirewallRuleEnabled(ops.JoinRuleKubelet.Name, false))
	got, err := agent.Call(ctx, n.OS(), ops.JoinSetup, ops.JoinSetupRequest{})
	if err != nil || !slices.Equal(got.Rules, []string{ops.JoinRuleKubelet.Name}) {
		t.Fatalf("join-setup: %+v, %v", got, err)
	}
	if r, _ := n.FirewallRule(ops.JoinRuleKubelet.Name); !r.Enabled {
		t.Error("the rule is still off")
	}
}

// containerd reports Running before its pipe exists: at boot the kubelet
// starts, finds no runtime and exits. The restart actions join-setup
// gives it bring it back once the pipe is there; without them it stays
// down. The test drives the machine's clock.
func TestJoinSetupBringsTheKubeletBackAfterABoot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup bool
		want  simnode.ServiceStatus
	}{
		{"registered as a join registers it", true, simnode.StatusRunning},
		{"without join-setup", false, simnode.StatusStopped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := simnode.StartTest(t, simnode.WithDelays(simnode.Delays{ServiceStart: 10 * time.Millisecond, ServiceStop: 10 * time.Millisecond,
				CrashAfter: 100 * time.Millisecond, ShutdownGrace: 10 * time.Millisecond, Boot: 50 * time.Millisecond}))
			n := ts.Node()
			must(t, n.ConfigureService("kubelet", func(c *simnode.ServiceConfig) {
				c.Args = append(c.Args, "--container-runtime-endpoint=npipe:////./pipe/containerd-containerd")
			}))
			must(t, n.Update(func(s *simnode.State) error {
				s.PipeDelays = map[string]time.Duration{"containerd": 3 * time.Second}
				return nil
			}))
			if tt.setup {
				if _, err := agent.Call(context.Background(), n.OS(), ops.JoinSetup, ops.JoinSetupRequest{Services: []string{"kubelet", "containerd"}}); err != nil {
					t.Fatal(err)
				}
			}
			base := time.Now()
			var offset atomic.Int64
			n.SetClock(func() time.Time { return base.Add(time.Duration(offset.Load())) })
			boots := len(n.Boots())
			n.ScheduleRestart(0)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for len(n.Boots()) == boots {
				must(t, n.Sleep(ctx, 5*time.Millisecond))
			}
			for _, at := range []time.Duration{time.Second, 5 * time.Second, 12 * time.Second, 13 * time.Second} {
				offset.Store(int64(at))
				n.Snapshot() // the machine applies what is due
			}
			kubelet, err := n.Service("kubelet")
			must(t, err)
			if kubelet.Status != tt.want || !slices.ContainsFunc(kubelet.EventLog, func(e string) bool { return strings.Contains(e, "terminated unexpectedly") }) {
				t.Errorf("13 s after the boot: kubelet %s (events %q); want %s after it exited once", kubelet.Status, kubelet.EventLog, tt.want)
			}
		})
	}
}
