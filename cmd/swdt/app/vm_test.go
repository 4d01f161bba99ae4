package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/vm"
)

// vmJSON is `swdt vm ... -o json` output, every subcommand's fields.
type vmJSON struct {
	Kind  string
	Nodes []struct {
		Name, VM, Error string
		Result          string
		Status          vm.Status
		AlreadyRunning  bool
		Forced          bool
		AlreadyOff      bool
		Snapshot        string
		State           vm.State
		Snapshots       []vm.Snapshot
		Addresses       []vm.Address
	} `json:"nodes"`
}

// kubeSnapshotJSON is the part of `swdt kubernetes -o json` --snapshot adds.
type kubeSnapshotJSON struct {
	Nodes []struct{ Snapshot string } `json:"nodes"`
}

// vmLab is a VM behind a hypervisor, and the simulated Windows guest that
// answers SSH on the address the hypervisor reports for it (through a
// ~/.ssh/config entry for that address).
type vmLab struct {
	guest *simnode.TestServer
	dir   string
	// knownHosts holds the host keys of every server of the lab.
	knownHosts string
	// hook, when set, is the env's openVMHook.
	hook func(ctx context.Context, spec *v1alpha1.Node) (vm.Provider, error)
}

// newVMLab starts the guest and writes ~/.ssh/config (in a fresh HOME)
// with sshConfig and a Host entry named guestAlias for the guest.
func newVMLab(t *testing.T, guestAlias, sshConfig string, knownHosts ...string) *vmLab {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	guest := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Hostname = "WIN-GUEST" }))
	l := &vmLab{guest: guest, dir: t.TempDir()}
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := sshConfig + guest.SSHConfig(guestAlias)
	if err := os.WriteFile(filepath.Join(home, ".ssh", "config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
	var all []byte
	for _, f := range append(knownHosts, guest.KnownHostsFile) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	l.knownHosts = filepath.Join(l.dir, "known_hosts")
	if err := os.WriteFile(l.knownHosts, all, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.dir, "kubelet.exe"), []byte("MZ kubelet built here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return l
}

// file writes a node.yaml for a node named name without hostname whose
// spec.vm is vmSpec (YAML, indented under vm:), and returns its path.
func (l *vmLab) file(t *testing.T, name, vmSpec string) string {
	t.Helper()
	c := l.guest.Credentials()
	c.Hostname, c.KnownHostsFile = "", l.knownHosts
	doc := nodeHeader(name, c) + "  vm:\n" + vmSpec + `  kubernetes:
    provisioners:
    - name: kubelet
      sourceURL: ./kubelet.exe
      destination: 'C:\k\kubelet.exe'
`
	path := filepath.Join(l.dir, name+".yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run runs swdt with the lab's openVMHook.
func (l *vmLab) run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{streams: Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, notify: notifySignals, openVMHook: l.hook}
	code = runEnv(context.Background(), e, args)
	return code, out.String(), errb.String()
}

// mustRun runs swdt and fails the test unless it exits with want.
func (l *vmLab) mustRun(t *testing.T, want int, args ...string) (stdout, stderr string) {
	t.Helper()
	code, out, errOut := l.run(t, args...)
	if code != want {
		t.Fatalf("swdt %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errOut)
	}
	return out, errOut
}

// hypervLab is a lab whose VM "Win 2022" runs on a simnode playing the
// Hyper-V host "hv", its adapter reporting 10.11.12.13.
func hypervLab(t *testing.T, vms ...*simnode.HyperVVM) (*vmLab, *simnode.TestServer) {
	t.Helper()
	if len(vms) == 0 {
		vms = []*simnode.HyperVVM{{Name: "Win 2022", State: "Running", Adapters: []simnode.HyperVAdapter{
			{Name: "Network Adapter", MAC: "00155D0A0B0C", Addresses: []string{"fe80::5", "10.11.12.13"}}}}}
	}
	host := simnode.StartTest(t, simnode.WithHyperV(simnode.HyperVHost{VMs: vms}))
	return newVMLab(t, "10.11.12.13", host.SSHConfig("hv"), host.KnownHostsFile), host
}

const hypervVMSpec = `    provider: hyperv
    name: Win 2022
    hyperv:
      host: hv
    addressTimeout: 10s
`

func TestVMHyperV(t *testing.T) {
	l, host := hypervLab(t)
	file := l.file(t, "win", hypervVMSpec)

	out, _ := l.mustRun(t, exitcode.OK, "vm", "status", "-c", file, "-o", "json")
	doc := decodeJSON[vmJSON](t, out)
	if len(doc.Nodes) != 1 || doc.Nodes[0].Name != "win" || doc.Nodes[0].VM != "Win 2022" || doc.Nodes[0].Status.State != vm.StateRunning {
		t.Fatalf("vm status: %s", out)
	}
	l.mustRun(t, exitcode.OK, "vm", "snapshot", "-c", file, "clean")
	out, _ = l.mustRun(t, exitcode.OK, "vm", "ip", "-c", file, "--no-color")
	if !strings.Contains(out, "10.11.12.13") || strings.Contains(out, "fe80::5") {
		t.Errorf("vm ip:\n%s", out)
	}

	// swdt status finds the guest through the address Hyper-V reports.
	out, errOut := l.mustRun(t, exitcode.OK, "status", "-c", file, "-o", "json")
	if got := statusSources(t, out)["hostname"]; got != "WIN-GUEST" {
		t.Errorf("status reached %q, want the guest\n%s", got, errOut)
	}

	// A swap with --snapshot leaves a snapshot that revert goes back to.
	out, errOut = l.mustRun(t, exitcode.OK, "kubernetes", "-c", file, "--snapshot", "--settle", "0", "-o", "json")
	snap := decodeJSON[kubeSnapshotJSON](t, out).Nodes[0].Snapshot
	if !strings.HasPrefix(snap, "swdt-") || !strings.HasSuffix(snap, "-kubelet") {
		t.Fatalf("kubernetes --snapshot: snapshot %q\n%s", snap, out)
	}
	// The hint to undo it names the node file given with -c.
	if want := "to undo this swap: swdt -c " + shellWord(file) + " vm revert " + snap; !strings.Contains(errOut, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
	// vm revert completes the snapshot names.
	out, _ = l.mustRun(t, exitcode.OK, "__complete", "vm", "revert", "-c", file, "")
	if !strings.Contains(out, "clean\n") || !strings.Contains(out, snap+"\n") {
		t.Errorf("completion of vm revert:\n%s", out)
	}
	out, _ = l.mustRun(t, exitcode.OK, "vm", "snapshots", "-c", file, "-o", "json")
	snaps := decodeJSON[vmJSON](t, out).Nodes[0].Snapshots
	if len(snaps) != 2 || snaps[0].Name != "clean" || snaps[1].Name != snap || !snaps[1].Current || snaps[1].Parent != "clean" {
		t.Errorf("snapshots: %s", out)
	}
	out, _ = l.mustRun(t, exitcode.OK, "vm", "stop", "-c", file, "--no-color")
	if !strings.Contains(out, "shut down") {
		t.Errorf("vm stop:\n%s", out)
	}
	l.mustRun(t, exitcode.OK, "vm", "revert", "-c", file, snap)
	if vm := host.State().HyperV.VMs[0]; vm.State != "Running" || vm.Current != snap {
		t.Errorf("after revert: %+v", vm)
	}
	l.mustRun(t, exitcode.OK, "vm", "revert", "-c", file, "clean")
	out, _ = l.mustRun(t, exitcode.OK, "vm", "start", "-c", file, "-o", "json")
	if doc := decodeJSON[vmJSON](t, out); doc.Kind != "VMReport" || !doc.Nodes[0].AlreadyRunning || doc.Nodes[0].Result != "unchanged" {
		t.Errorf("vm start after reverting to a running snapshot: %s", out)
	}
}

// Several VMs of one Hyper-V host that has no swdt-agent yet: every node's
// connection meets the missing agent at once, and each answers.
func TestVMSeveralOnOneHyperVHost(t *testing.T) {
	names := []string{"A", "B", "C", "D"}
	var vms []*simnode.HyperVVM
	for _, n := range names {
		vms = append(vms, &simnode.HyperVVM{Name: n, State: "Running"})
	}
	l, _ := hypervLab(t, vms...)
	var docs []string
	for _, n := range names {
		raw, err := os.ReadFile(l.file(t, strings.ToLower(n), strings.Replace(hypervVMSpec, "Win 2022", n, 1)))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(raw))
	}
	file := filepath.Join(l.dir, "all.yaml")
	if err := os.WriteFile(file, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := l.mustRun(t, exitcode.OK, "vm", "status", "-c", file, "-o", "json")
	doc := decodeJSON[vmJSON](t, out)
	if len(doc.Nodes) != len(names) {
		t.Fatalf("vm status: %s", out)
	}
	for _, n := range doc.Nodes {
		if n.Error != "" || n.Status.State != vm.StateRunning {
			t.Errorf("node %s: %+v", n.Name, n)
		}
	}
}

// diskSnapshots is a Provider whose Snapshot also runs taken, to keep
// what the guest's disk holds at that moment.
type diskSnapshots struct {
	vm.Provider
	taken func()
}

func (d diskSnapshots) Snapshot(ctx context.Context, name string) error {
	d.taken()
	return d.Provider.Snapshot(ctx, name)
}

// A --snapshot snapshot is taken while the run holds the node's swap lock
// and has staged its files. After a revert brings them back, the next run
// takes the lock over at once (its run has ended) and removes them.
func TestVMSnapshotRevertTakesOverTheLock(t *testing.T) {
	l, _ := hypervLab(t)
	file := l.file(t, "win", hypervVMSpec)
	g := l.guest.Node()
	// disk is what the snapshot holds of the run: the lock file and the
	// files it names as staged.
	disk := map[string][]byte{}
	keep := func() {
		raw, err := g.ReadFile(ops.LockPath)
		if err != nil {
			t.Errorf("no swap lock while the snapshot is taken: %v", err)
			return
		}
		disk[ops.LockPath] = raw
		var rec struct{ Staged []string }
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		for _, p := range rec.Staged {
			if !g.Exists(p) {
				// A name recorded for an encoded upload the transfer
				// did not use (the file went as it is).
				continue
			}
			if disk[p], err = g.ReadFile(p); err != nil {
				t.Errorf("staged file %s: %v", p, err)
			}
		}
	}
	l.hook = func(ctx context.Context, spec *v1alpha1.Node) (vm.Provider, error) {
		p, err := vm.Open(ctx, spec, vm.Options{})
		if err != nil {
			return nil, err
		}
		return diskSnapshots{Provider: p, taken: keep}, nil
	}

	out, _ := l.mustRun(t, exitcode.OK, "kubernetes", "-c", file, "--snapshot", "--settle", "0", "-o", "json")
	snap := decodeJSON[kubeSnapshotJSON](t, out).Nodes[0].Snapshot
	if len(disk) != 2 {
		t.Fatalf("the snapshot held %d of the run's files, want the lock and one staged file", len(disk))
	}
	for p := range disk {
		if g.Exists(p) {
			t.Fatalf("%s left behind by the run", p)
		}
	}
	l.mustRun(t, exitcode.OK, "vm", "revert", "-c", file, snap)
	for p, b := range disk { // the guest's disk as the snapshot has it
		if err := g.WriteFile(p, b); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut := l.mustRun(t, exitcode.OK, "kubernetes", "-c", file, "--settle", "0", "--lock-wait", "3s", "--no-color")
	for _, want := range []string{"took over the swap lock of swdt kubernetes run", "removed 1 file(s) it had staged"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "waiting for the node's swap lock") {
		t.Errorf("the run waited for a lock whose run has ended:\n%s", errOut)
	}
	for p := range disk {
		if g.Exists(p) {
			t.Errorf("%s left behind after the takeover", p)
		}
	}
}

func TestVMBadInput(t *testing.T) {
	noAddress := &simnode.HyperVVM{Name: "Win 2022", State: "Running"}
	l, host := hypervLab(t, noAddress)
	good := l.file(t, "win", hypervVMSpec)
	kubeletBefore := l.guest.State().Services["kubelet"]
	closed := sshdtest.ClosedPort(t)
	tests := []struct {
		name   string
		file   string
		args   []string
		code   int
		stderr []string
	}{
		{name: "unknown provider", file: l.file(t, "vmware", "    provider: vmware\n    name: w\n"), args: []string{"vm", "status"},
			code: exitcode.Usage, stderr: []string{`node "vmware": spec.vm.provider: Unsupported value: "vmware"`}},
		{name: "VM that does not exist", file: l.file(t, "other", strings.Replace(hypervVMSpec, "Win 2022", "Win 2019", 1)),
			args: []string{"vm", "status"}, code: exitcode.Usage,
			stderr: []string{`node other: VM "Win 2019" (Hyper-V on hv): no such VM`}},
		{name: "snapshot that does not exist", file: good, args: []string{"vm", "revert", "nope"}, code: exitcode.Usage,
			stderr: []string{`node win: VM "Win 2022" (Hyper-V on hv): no such snapshot`, `"nope"`}},
		{name: "bad snapshot name", file: good, args: []string{"vm", "snapshot", "a b"}, code: exitcode.Usage,
			stderr: []string{`snapshot name "a b"`}},
		{name: "snapshot name too long", file: good, args: []string{"vm", "snapshot", strings.Repeat("s", 129)}, code: exitcode.Usage,
			stderr: []string{"at most 128 characters"}},
		{name: "unreachable hypervisor", file: l.file(t, "far", strings.Replace(hypervVMSpec, "host: hv", "host: Administrator@"+closed, 1)),
			args: []string{"vm", "snapshot", "s1"}, code: exitcode.Failure,
			stderr: []string{`node far: VM "Win 2022" (Hyper-V on Administrator@` + closed + `): hypervisor unreachable`}},
		{name: "VM without an address after the wait", file: l.file(t, "slow", strings.Replace(hypervVMSpec, "10s", "1s", 1)),
			args: []string{"status"}, code: exitcode.Failure,
			stderr: []string{`node slow: connect: VM "Win 2022" (Hyper-V on hv): VM has no address after 1s`}},
		{name: "node without spec.vm", file: statusFile(t, l.guest, "", "MZ"), args: []string{"vm", "snapshot", "s1"}, code: exitcode.Usage,
			stderr: []string{"node winworker has no spec.vm", "see the commented vm section of 'swdt config init'"}},
		{name: "snapshot without a name", file: good, args: []string{"vm", "snapshot"}, code: exitcode.Usage,
			stderr: []string{"swdt vm snapshot needs a name for the snapshot, for example swdt -c ", " vm snapshot before-containerd-1.7"}},
		{name: "revert without a name", file: good, args: []string{"vm", "revert"}, code: exitcode.Usage,
			stderr: []string{"swdt vm revert needs the name of a snapshot to go back to; swdt -c ", " vm snapshots lists them"}},
		{name: "kubernetes --snapshot without spec.vm", file: statusFile(t, l.guest, "", "MZ"), args: []string{"kubernetes", "--snapshot"},
			code: exitcode.Usage, stderr: []string{"--snapshot: node winworker", "nothing was changed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := l.run(t, append(tt.args, "-c", tt.file, "--no-color")...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, errOut)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
		})
	}
	if vm := host.State().HyperV.VMs[0]; vm.State != "Running" || len(vm.Checkpoints) != 0 {
		t.Errorf("bad input changed the VM: %+v", vm)
	}
	if svc := l.guest.State().Services["kubelet"]; svc.StartCount != kubeletBefore.StartCount || svc.PID != kubeletBefore.PID {
		t.Errorf("bad input touched the guest: %+v", svc)
	}
}
