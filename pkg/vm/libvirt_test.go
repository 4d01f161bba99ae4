//go:build unix

package vm

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/libvirtdtest"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// libvirtNode is a defaulted node whose VM is domain on uri.
func libvirtNode(uri, domain string) *v1alpha1.Node {
	n := &v1alpha1.Node{Spec: v1alpha1.NodeSpec{VM: &v1alpha1.VMSpec{
		Provider: v1alpha1.VMProviderLibvirt, Name: domain, Libvirt: &v1alpha1.LibvirtSpec{URI: uri}}}}
	n.Name = "win"
	v1alpha1.SetDefaults_Node(n)
	return n
}

// TestLibvirtSequence drives the test driver's built-in domain through
// every operation on one connection (the driver's state lives as long as
// the connection).
func TestLibvirtSequence(t *testing.T) {
	d := libvirtdtest.Start(t)
	p := openTest(t, libvirtNode(d.URI("/default"), "test"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	st, err := p.Status(ctx)
	if err != nil || st.State != StateRunning || st.Snapshots != 0 || st.Provider != v1alpha1.VMProviderLibvirt {
		t.Fatalf("status = %+v, %v", st, err)
	}
	if err := p.Snapshot(ctx, "s1"); err != nil {
		t.Fatalf("snapshot s1: %v", err)
	}
	err = p.Snapshot(ctx, "s1")
	if !errors.Is(err, ErrSnapshotExists) || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), `VM "test"`) {
		t.Errorf("second snapshot s1: %v (exit %d)", err, exitcode.Code(err))
	}
	stopped, err := p.Stop(ctx, 10*time.Second)
	if err != nil || stopped.Forced || stopped.AlreadyOff {
		t.Fatalf("stop = %+v, %v", stopped, err)
	}
	if stopped, err := p.Stop(ctx, time.Second); err != nil || !stopped.AlreadyOff {
		t.Errorf("second stop = %+v, %v", stopped, err)
	}
	if err := p.Snapshot(ctx, "s2-off"); err != nil {
		t.Fatalf("snapshot s2-off: %v", err)
	}
	if already, err := p.Start(ctx); err != nil || already {
		t.Fatalf("start = %v, %v", already, err)
	}
	if already, err := p.Start(ctx); err != nil || !already {
		t.Errorf("second start = %v, %v", already, err)
	}
	state, err := p.Revert(ctx, "s2-off")
	if err != nil || state != StateOff {
		t.Fatalf("revert s2-off = %s, %v", state, err)
	}
	state, err = p.Revert(ctx, "s1")
	if err != nil || state != StateRunning {
		t.Fatalf("revert s1 = %s, %v", state, err)
	}
	snaps, err := p.Snapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range snaps {
		names = append(names, s.Name)
		if s.Created.IsZero() || s.Current != (s.Name == "s1") {
			t.Errorf("snapshot %+v", s)
		}
	}
	if !slices.Equal(names, []string{"s1", "s2-off"}) || snaps[1].Parent != "s1" {
		t.Errorf("snapshots = %+v", snaps)
	}
	if st, err := p.Status(ctx); err != nil || st.Snapshots != 2 || st.CurrentSnapshot != "s1" {
		t.Errorf("status = %+v, %v", st, err)
	}

	_, err = p.Revert(ctx, "nope")
	if !errors.Is(err, ErrSnapshotNotFound) || exitcode.Code(err) != exitcode.Usage || !strings.Contains(err.Error(), "nope") {
		t.Errorf("revert nope: %v", err)
	}
	if st, _ := p.Status(ctx); st.State != StateRunning || st.CurrentSnapshot != "s1" {
		t.Errorf("a failed revert changed the VM: %+v", st)
	}
	if err := p.Snapshot(ctx, "no spaces"); exitcode.Code(err) != exitcode.Usage {
		t.Errorf("snapshot with a space: %v", err)
	}

	addrs, err := p.Addresses(ctx)
	// The test driver makes the address up from the domain's id, which
	// each start changes.
	if err != nil || len(addrs) != 1 || !strings.HasPrefix(addrs[0].IP, "192.168.122.") || addrs[0].Source != "lease" || addrs[0].MAC == "" {
		t.Fatalf("addresses = %+v, %v", addrs, err)
	}
	got, err := WaitForAddress(ctx, p, 5*time.Second, func(_ context.Context, ip string) (bool, error) { return false, nil })
	if err != nil || got != addrs[0].IP {
		t.Errorf("WaitForAddress = %q, %v", got, err)
	}
}

func TestLibvirtBadInput(t *testing.T) {
	d := libvirtdtest.Start(t)
	// A socket that accepts and never answers.
	silent := filepath.Join(t.TempDir(), "silent.sock")
	l, err := net.Listen("unix", silent)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tests := []struct {
		name     string
		node     *v1alpha1.Node
		sentinel error
		code     int
		want     string
	}{
		{name: "no such domain", node: libvirtNode(d.URI("/default"), "win2022"),
			sentinel: ErrVMNotFound, code: exitcode.Usage, want: `VM "win2022" (libvirt test+unix:///default`},
		{name: "no libvirtd", node: libvirtNode("qemu:///system?socket="+filepath.Join(t.TempDir(), "none"), "win2022"),
			sentinel: ErrUnreachable, code: exitcode.Failure, want: "no libvirt socket answered"},
		{name: "libvirtd does not answer", node: libvirtNode("qemu:///system?socket="+silent, "win2022"),
			sentinel: ErrUnreachable, code: exitcode.Failure, want: "did not answer"},
		{name: "tcp transport", node: libvirtNode("qemu+tcp://kvm/system", "win2022"),
			code: exitcode.Usage, want: "tcp transport is not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			p, err := Open(context.Background(), tt.node, Options{DialTimeout: 2 * time.Second})
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
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
		})
	}
}

func TestLibvirtNamedDomainFile(t *testing.T) {
	d := libvirtdtest.Start(t)
	p := openTest(t, libvirtNode(d.URI(libvirtdtest.DomainXML(t, "win2022")), "win2022"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if st, err := p.Status(ctx); err != nil || st.Name != "win2022" || st.State != StateRunning {
		t.Fatalf("status = %+v, %v", st, err)
	}
	// The guest never answers SSH: the wait ends with the address it saw.
	_, err := WaitForAddress(ctx, p, 3*time.Second, func(context.Context, string) (bool, error) {
		return true, errors.New("connection refused")
	})
	if !errors.Is(err, ErrNoAddress) || !strings.Contains(err.Error(), "192.168.122.3") || !strings.Contains(err.Error(), `VM "win2022"`) {
		t.Errorf("WaitForAddress: %v", err)
	}
	if _, err := p.Stop(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	_, err = WaitForAddress(ctx, p, time.Minute, nil)
	if err == nil || !strings.Contains(err.Error(), "is off") || !strings.Contains(err.Error(), "swdt vm start") {
		t.Errorf("WaitForAddress on an off VM: %v", err)
	}
}
