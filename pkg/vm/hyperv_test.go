package vm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// hvHost is a simnode playing a Hyper-V host, reachable as the ssh config
// alias "hv".
func hvHost(t *testing.T, host simnode.HyperVHost) *simnode.TestServer {
	t.Helper()
	ts := simnode.StartTest(t, simnode.WithHyperV(host))
	sshHome(t, ts.SSHConfig("hv"))
	return ts
}

// sshHome points HOME (hence ~/.ssh/config) at a directory holding
// config, and turns ssh-agent off.
func sshHome(t *testing.T, config string) {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "config"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
}

// hypervNode is a defaulted node whose VM is name on the Hyper-V host
// host, checking host keys against ts's known_hosts.
func hypervNode(ts *simnode.TestServer, host, name string) *v1alpha1.Node {
	n := &v1alpha1.Node{Spec: v1alpha1.NodeSpec{
		Credentials: v1alpha1.CredentialsSpec{KnownHostsFile: ts.KnownHostsFile, HostKeyPolicy: v1alpha1.HostKeyPolicyStrict},
		VM:          &v1alpha1.VMSpec{Provider: v1alpha1.VMProviderHyperV, Name: name, HyperV: &v1alpha1.HyperVSpec{Host: host}}}}
	n.Name = "win"
	v1alpha1.SetDefaults_Node(n)
	return n
}

func win2022() *simnode.HyperVVM {
	return &simnode.HyperVVM{Name: "Win 2022 [dev]", State: "Running", Adapters: []simnode.HyperVAdapter{
		{Name: "Network Adapter", MAC: "00155D010203", Addresses: []string{"fe80::1234", "2001:db8::5", "10.0.0.5"}},
	}}
}

func TestHyperVSequence(t *testing.T) {
	ts := hvHost(t, simnode.HyperVHost{VMs: []*simnode.HyperVVM{win2022()}})
	// The name has a space and wildcard characters: it must travel as data.
	p := openTest(t, hypervNode(ts, "hv", "win 2022 [dev]"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if st, err := p.Status(ctx); err != nil || st.State != StateRunning || st.Name != "Win 2022 [dev]" || st.Hypervisor != "hv" {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if !strings.Contains(p.Describe(), `VM "win 2022 [dev]" (Hyper-V on hv)`) {
		t.Errorf("describe = %s", p.Describe())
	}
	addrs, err := p.Addresses(ctx)
	if err != nil || len(addrs) != 2 || addrs[0].IP != "10.0.0.5" || addrs[1].IP != "2001:db8::5" || addrs[0].Source != "adapter" {
		t.Errorf("addresses = %+v, %v", addrs, err)
	}
	if err := p.Snapshot(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := p.Snapshot(ctx, "S1"); !errors.Is(err, ErrSnapshotExists) || exitcode.Code(err) != exitcode.Usage {
		t.Errorf("second snapshot: %v", err)
	}
	if stopped, err := p.Stop(ctx, 10*time.Second); err != nil || stopped.Forced || stopped.AlreadyOff {
		t.Fatalf("stop = %+v, %v", stopped, err)
	}
	if addrs, err := p.Addresses(ctx); err != nil || len(addrs) != 0 {
		t.Errorf("addresses of an off VM = %+v, %v", addrs, err)
	}
	if err := p.Snapshot(ctx, "off1"); err != nil {
		t.Fatal(err)
	}
	if already, err := p.Start(ctx); err != nil || already {
		t.Fatalf("start = %v, %v", already, err)
	}
	if st, err := p.Revert(ctx, "off1"); err != nil || st != StateOff {
		t.Fatalf("revert off1 = %s, %v", st, err)
	}
	if st, err := p.Revert(ctx, "s1"); err != nil || st != StateRunning {
		t.Fatalf("revert s1 = %s, %v", st, err)
	}
	_, err = p.Revert(ctx, "missing")
	if !errors.Is(err, ErrSnapshotNotFound) || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), `"missing"`) {
		t.Errorf("revert missing: %v", err)
	}
	snaps, err := p.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range snaps {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"s1", "off1"}) || !snaps[0].Current || snaps[1].Parent != "s1" || snaps[0].Created.IsZero() {
		t.Errorf("snapshots = %+v", snaps)
	}
	if st, err := p.Status(ctx); err != nil || st.Snapshots != 2 || st.CurrentSnapshot != "s1" {
		t.Errorf("status = %+v, %v", st, err)
	}
	vm := ts.State().HyperV.VMs[0]
	if vm.Stops != 1 || vm.TurnOffs != 0 || vm.State != "Running" {
		t.Errorf("model = %+v", vm)
	}
}

func TestHyperVStopForcedAfterTimeout(t *testing.T) {
	stubborn := win2022()
	stubborn.IgnoresShutdown = true
	ts := hvHost(t, simnode.HyperVHost{VMs: []*simnode.HyperVVM{stubborn}})
	p := openTest(t, hypervNode(ts, "hv", stubborn.Name))
	start := time.Now()
	stopped, err := p.Stop(context.Background(), time.Second)
	if err != nil || !stopped.Forced {
		t.Fatalf("stop = %+v, %v", stopped, err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("forced after %s, before the timeout", d)
	}
	if vm := ts.State().HyperV.VMs[0]; vm.State != "Off" || vm.TurnOffs != 1 {
		t.Errorf("model = %+v", vm)
	}
}

func TestHyperVBadInput(t *testing.T) {
	twins := simnode.HyperVHost{VMs: []*simnode.HyperVVM{{Name: "twin", State: "Off"}, {Name: "TWIN", State: "Off"}, win2022()}}
	ts := hvHost(t, twins)
	plain := simnode.StartTest(t) // a Windows host without Hyper-V
	closed := sshdtest.ClosedPort(t)
	sshHome(t, ts.SSHConfig("hv")+plain.SSHConfig("plain"))
	knownHosts := filepath.Join(t.TempDir(), "known_hosts")
	a, _ := os.ReadFile(ts.KnownHostsFile)
	b, _ := os.ReadFile(plain.KnownHostsFile)
	if err := os.WriteFile(knownHosts, append(a, b...), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, host, vm string
		sentinel       error
		code           int
		want           string
	}{
		{name: "no such VM", host: "hv", vm: "win2019", sentinel: ErrVMNotFound, code: exitcode.Usage,
			want: `VM "win2019" (Hyper-V on hv): no such VM: no VM named "win2019" on WIN-SIMNODE01`},
		{name: "two VMs of that name", host: "hv", vm: "twin", code: exitcode.Usage, want: "2 VMs are named"},
		{name: "host without Hyper-V", host: "plain", vm: "win2019", code: exitcode.Usage, want: "Hyper-V PowerShell module is not installed"},
		{name: "unreachable host", host: "Administrator@" + closed, vm: "win2019", sentinel: ErrUnreachable, code: exitcode.Failure,
			want: "cannot reach ssh server"},
		{name: "local Hyper-V off Windows", host: "", vm: "win2019", code: exitcode.Usage, want: "spec.vm.hyperv.host is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := hypervNode(ts, tt.host, tt.vm)
			n.Spec.Credentials.KnownHostsFile = knownHosts
			p, err := Open(context.Background(), n, Options{DialTimeout: 2 * time.Second})
			if err == nil {
				p.Close()
				t.Fatal("Open succeeded")
			}
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("error %v is not %v", err, tt.sentinel)
			}
			if exitcode.Code(err) != tt.code || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v (exit %d), want %q and exit %d", err, exitcode.Code(err), tt.want, tt.code)
			}
		})
	}
	if vms := ts.State().HyperV.VMs; vms[0].State != "Off" || vms[2].State != "Running" || len(vms[2].Checkpoints) != 0 {
		t.Errorf("bad input changed the host: %+v %+v", vms[0], vms[2])
	}
}

func TestHyperVWaitForAddress(t *testing.T) {
	vm := win2022()
	vm.State = "Off"
	ts := hvHost(t, simnode.HyperVHost{VMs: []*simnode.HyperVVM{vm}})
	p := openTest(t, hypervNode(ts, "hv", vm.Name))
	ctx := context.Background()
	if _, err := WaitForAddress(ctx, p, time.Minute, nil); err == nil || !strings.Contains(err.Error(), "is off") {
		t.Errorf("off VM: %v", err)
	}
	if _, err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var probed []string
	ip, err := WaitForAddress(ctx, p, 10*time.Second, func(_ context.Context, ip string) (bool, error) {
		probed = append(probed, ip)
		if ip == "10.0.0.5" {
			return true, errors.New("connection refused")
		}
		return false, nil
	})
	if err != nil || ip != "2001:db8::5" || !slices.Equal(probed, []string{"10.0.0.5", "2001:db8::5"}) {
		t.Errorf("WaitForAddress = %q, %v (probed %v)", ip, err, probed)
	}
	_, err = WaitForAddress(ctx, p, time.Second, func(context.Context, string) (bool, error) {
		return false, errors.New("ssh: unable to authenticate")
	})
	if err == nil || !strings.Contains(err.Error(), "unable to authenticate") {
		t.Errorf("a failure that will not go away ends the wait: %v", err)
	}
}
