package simnode

import (
	"errors"
	"os"
	"slices"
	"testing"
)

// TestDeleteWhileSharedOpen: a file another program holds open sharing
// delete access can be renamed and deleted; on Server 2019 the deleted
// file's name stays taken (listed, and access denied to open, create or
// rename onto) until the handle closes, while Server 2022 frees it at
// once. The hold follows the file through a rename.
func TestDeleteWhileSharedOpen(t *testing.T) {
	const dir, p, aside = `C:\k`, `C:\k\config.yaml`, `C:\k\config.yaml.old`
	for _, tt := range []struct {
		release     string
		renameFirst bool
		wantPending string // the name the delete leaves taken
	}{
		{release: Server2019, wantPending: p},
		{release: Server2019, renameFirst: true, wantPending: aside},
		{release: Server2022},
		{release: Server2022, renameFirst: true},
	} {
		t.Run(tt.release+map[bool]string{true: "/renamed", false: ""}[tt.renameFirst], func(t *testing.T) {
			ts := StartTest(t, WithOptions(func(o *Options) { o.Release = tt.release }))
			n := ts.Node()
			if err := n.WriteFile(p, []byte("old")); err != nil {
				t.Fatal(err)
			}
			if err := ts.SetFaults(Faults{SharedOpen: []string{p}}); err != nil {
				t.Fatal(err)
			}
			gone := p
			if tt.renameFirst {
				if err := n.Rename(p, aside, false); err != nil {
					t.Fatalf("rename a file held open sharing delete: %v", err)
				}
				gone = aside
			}
			if err := n.Remove(gone); err != nil {
				t.Fatalf("remove a file held open sharing delete: %v", err)
			}
			names := func() []string {
				var out []string
				entries, err := n.List(dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					out = append(out, e.Path)
				}
				return out
			}
			if tt.wantPending == "" {
				if slices.Contains(names(), gone) {
					t.Errorf("%s still listed after its delete on Server %s", gone, tt.release)
				}
			} else {
				if !slices.Contains(names(), tt.wantPending) {
					t.Errorf("delete-pending %s not listed: %v", tt.wantPending, names())
				}
				for what, err := range map[string]error{
					"create":      n.WriteFile(tt.wantPending, []byte("new")),
					"stat":        func() error { _, err := n.Stat(tt.wantPending); return err }(),
					"rename onto": func() error { _ = n.WriteFile(dir+`\other`, nil); return n.Rename(dir+`\other`, tt.wantPending, true) }(),
				} {
					var fe *FileError
					if !errors.As(err, &fe) || fe.Code != 5 {
						t.Errorf("%s a delete-pending name: %v, want access denied", what, err)
					}
				}
				if err := ts.SetFaults(Faults{}); err != nil {
					t.Fatal(err)
				}
				if slices.Contains(names(), tt.wantPending) {
					t.Errorf("%s still listed after the handle closed", tt.wantPending)
				}
			}
			if err := n.WriteFile(gone, []byte("new")); err != nil {
				t.Errorf("create %s once its name is free: %v", gone, err)
			}
			if tt.renameFirst {
				if err := n.WriteFile(p, []byte("new")); err != nil {
					t.Errorf("create %s after it was moved aside: %v", p, err)
				}
			}
		})
	}
}

// TestDiscardFolder: what the node deletes, and a file a rename replaces,
// go to DiscardFolder of the state directory and are freed there by the
// time the server is closed (the bench waits on that folder between its
// runs, so that no run pays for what the one before deleted).
func TestDiscardFolder(t *testing.T) {
	ts := StartTest(t)
	n := ts.Node()
	const a, b, c = `C:\k\a.exe`, `C:\k\b.exe`, `C:\k\c.exe`
	for _, p := range []string{a, b, c} {
		if err := n.WriteFile(p, make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.Remove(a); err != nil {
		t.Fatal(err)
	}
	if err := n.Rename(b, c, true); err != nil {
		t.Fatal(err)
	}
	dir := DiscardFolder(ts.StateDir())
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("no discard folder at %s after a delete: %v", dir, err)
	}
	ts.Server.Close()
	if left, err := os.ReadDir(dir); err != nil || len(left) > 0 {
		t.Errorf("the discard folder holds %d files after Close (%v), want none", len(left), err)
	}
}
