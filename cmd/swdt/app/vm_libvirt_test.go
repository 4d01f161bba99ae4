//go:build unix

package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/libvirtdtest"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/vm"
)

// sharedVM is a Provider whose Close is left to the test: the libvirt
// test driver's state lives as long as its connection, so every run of
// a test shares one.
type sharedVM struct{ vm.Provider }

func (sharedVM) Close() error { return nil }

func TestVMLibvirt(t *testing.T) {
	d := libvirtdtest.Start(t)
	// The test driver reports 192.168.122.<n> for its domain; the ssh
	// config entry sends that to the guest.
	l := newVMLab(t, "192.168.122.*", "")
	file := l.file(t, "kvm", fmt.Sprintf("    provider: libvirt\n    name: test\n    libvirt:\n      uri: %q\n    addressTimeout: 10s\n", d.URI("/default")))
	res, err := config.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := vm.Open(ctx, &res.Nodes[0], vm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l.hook = func(context.Context, *v1alpha1.Node) (vm.Provider, error) { return sharedVM{p}, nil }

	l.mustRun(t, exitcode.OK, "vm", "snapshot", "-c", file, "before")
	out, _ := l.mustRun(t, exitcode.OK, "vm", "status", "-c", file, "--no-color")
	if !strings.Contains(out, "running") || !strings.Contains(out, "before") {
		t.Errorf("vm status:\n%s", out)
	}
	out, errOut := l.mustRun(t, exitcode.OK, "status", "-c", file, "-o", "json", "-v")
	if got := statusSources(t, out)["hostname"]; got != "WIN-GUEST" || !strings.Contains(errOut, "address from the hypervisor") {
		t.Errorf("status reached %q\n%s", got, errOut)
	}
	out, _ = l.mustRun(t, exitcode.OK, "kubernetes", "-c", file, "--snapshot", "--settle", "0", "-o", "json")
	snap := decodeJSON[kubeSnapshotJSON](t, out).Nodes[0].Snapshot
	l.mustRun(t, exitcode.OK, "vm", "stop", "-c", file)
	out, _ = l.mustRun(t, exitcode.OK, "vm", "revert", "-c", file, snap, "-o", "json")
	if st := decodeJSON[vmJSON](t, out).Nodes[0].State; st != vm.StateRunning {
		t.Errorf("revert to %s: state %s", snap, st)
	}
	out, _ = l.mustRun(t, exitcode.OK, "vm", "snapshots", "-c", file, "-o", "json")
	snaps := decodeJSON[vmJSON](t, out).Nodes[0].Snapshots
	if len(snaps) != 2 || snaps[0].Name != "before" || snaps[1].Name != snap || !snaps[1].Current {
		t.Errorf("snapshots: %s", out)
	}
	out, _ = l.mustRun(t, exitcode.OK, "vm", "ip", "-c", file, "-o", "json")
	if a := decodeJSON[vmJSON](t, out).Nodes[0].Addresses; len(a) != 1 || !strings.HasPrefix(a[0].IP, "192.168.122.") {
		t.Errorf("vm ip: %s", out)
	}
	_, errOut = l.mustRun(t, exitcode.Usage, "vm", "revert", "-c", file, "nope", "--no-color")
	if !strings.Contains(errOut, `node kvm: VM "test" (libvirt test+unix:///default`) || !strings.Contains(errOut, "no such snapshot: nope") {
		t.Errorf("revert nope:\n%s", errOut)
	}
}
