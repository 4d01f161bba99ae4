package wine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	swdtnode "sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
)

// connect opens pkg/node's connection to the node, for the ops swdt's
// commands cannot reach under Wine (swdt setup needs PowerShell first).
func (n *node) connect() *swdtnode.Node {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := v1alpha1.Node{Spec: v1alpha1.NodeSpec{Credentials: n.ts.Credentials()}}
	spec.Name = "wine"
	c, err := swdtnode.Connect(ctx, spec, swdtnode.ConnectOptions{})
	if err != nil {
		n.t.Fatal(err)
	}
	n.t.Cleanup(func() { c.Close() })
	return c
}

// authorized-keys-add writes the keys; Wine does not keep the DACL, and
// the op says so instead of claiming it.
func TestAuthorizedKeysWithoutPowerShell(t *testing.T) {
	n := newNode(t)
	c := n.connect()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDw4k8f0MgN4cYb6rFJ0mQ6r2rV+2q0c0V0q7cF2fWvL wine"
	st, err := c.AddAuthorizedKeys(ctx, []string{key})
	if err != nil {
		t.Fatal(err)
	}
	// Wine keeps no DACL and no owner but the creator: the op reads them
	// back and claims neither.
	if st.Added != 1 || !slices.Contains(st.Keys, key) || st.ACLOK || st.OwnerOK || st.Owner == "" {
		t.Errorf("state %+v, want the key added, and the ACL and the owner reported as not set", st)
	}
	raw, err := n.ts.Node().ReadFile(ops.AdministratorsAuthorizedKeys)
	if err != nil || !strings.Contains(string(raw), key) {
		t.Errorf("%s = %q, %v", ops.AdministratorsAuthorizedKeys, raw, err)
	}
	// The file the agent wrote itself is its own, not a planted one: a
	// second run keeps it, though Wine reports its ACL as not restricted.
	const second = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG9hZ2VudGtleXNlY29uZGtleXNlY29uZGtleXNlY29u second"
	st, err = c.AddAuthorizedKeys(ctx, []string{key, second})
	if err != nil || st.SetAside != "" || st.Added != 1 || !slices.Contains(st.Keys, key) {
		t.Errorf("second run: state %+v, %v; want the agent's own file kept and extended", st, err)
	}
}

// choco-packages runs a (fake) choco.exe: exit codes and the version
// listed after the install.
func TestChocoPackagesWithoutPowerShell(t *testing.T) {
	n := newNode(t)
	sim := n.ts.Node()
	if err := sim.MkdirAll(`C:\ProgramData\chocolatey`); err != nil {
		t.Fatal(err)
	}
	if err := sim.WriteFile(`C:\ProgramData\chocolatey\choco.exe`, shared.fakechoco); err != nil {
		t.Fatal(err)
	}
	c := n.connect()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := c.InstallPackages(ctx, []string{"vim", "nosuchpackage"})
	if err != nil {
		t.Fatal(err)
	}
	want := []ops.ChocoPackageResult{{Name: "vim", Result: ops.PackageInstalled, Version: "1.0.0"}, {Name: "nosuchpackage", Result: ops.PackageNotFound, ExitCode: 1}}
	for i := range got {
		got[i].Output = ""
	}
	if !slices.Equal(got, want) {
		t.Errorf("results %+v, want %+v", got, want)
	}
}
