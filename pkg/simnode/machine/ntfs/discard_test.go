package ntfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestDiscards: a deleted file's name is gone when remove returns, its
// data is freed by the time wait returns, also where the discard folder
// cannot be made; what a stopped simnode left to free goes when the
// volume opens again.
func TestDiscards(t *testing.T) {
	tests := []struct {
		name string
		// block puts a file where the discard folder goes.
		block bool
	}{
		{name: "moved and freed in the background"},
		{name: "no discard folder: removed in place", block: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "fs")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			d := newDiscards(root)
			if tt.block {
				if err := os.WriteFile(d.dir, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var files []string
			for _, name := range []string{"a.exe", "b.exe", "c.exe"} {
				p := filepath.Join(root, name)
				if err := os.WriteFile(p, make([]byte, 1<<20), 0o600); err != nil {
					t.Fatal(err)
				}
				files = append(files, p)
			}
			for _, p := range files {
				if err := d.remove(p); err != nil {
					t.Fatalf("remove %s: %v", p, err)
				}
				if _, err := os.Lstat(p); !os.IsNotExist(err) {
					t.Fatalf("%s is still there after its remove (%v)", p, err)
				}
			}
			d.wait()
			if tt.block {
				return
			}
			left, err := os.ReadDir(d.dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) > 0 {
				t.Errorf("the discard folder still holds %d files after wait", len(left))
			}
		})
	}
	t.Run("a file a rename replaces", func(t *testing.T) {
		for _, renamed := range []bool{true, false} {
			dir := t.TempDir()
			root := filepath.Join(dir, "fs")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			d := newDiscards(root)
			target, from := filepath.Join(root, "kubelet.exe"), filepath.Join(root, "kubelet.exe.swdt-part")
			for p, b := range map[string]byte{target: 'o', from: 'n'} {
				if err := os.WriteFile(p, bytes.Repeat([]byte{b}, 1<<20), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			done := d.replacing(target)
			held, err := os.ReadDir(d.dir)
			if err != nil || len(held) != 1 {
				t.Fatalf("the discard folder holds %d files, %v; want the replaced file's link", len(held), err)
			}
			if got, _ := os.ReadFile(filepath.Join(d.dir, held[0].Name())); len(got) != 1<<20 || got[0] != 'o' {
				t.Errorf("the discard folder's file is not the replaced file's data")
			}
			if renamed {
				if err := os.Rename(from, target); err != nil {
					t.Fatal(err)
				}
			}
			done(renamed)
			d.wait()
			if left, _ := os.ReadDir(d.dir); len(left) > 0 {
				t.Errorf("renamed %v: the discard folder still holds %d files", renamed, len(left))
			}
			want := byte('o')
			if renamed {
				want = 'n'
			}
			if got, err := os.ReadFile(target); err != nil || len(got) != 1<<20 || got[0] != want {
				t.Errorf("renamed %v: the target holds %.1q (%d bytes), %v; want %q", renamed, got[:min(len(got), 1)], len(got), err, want)
			}
		}
	})
	t.Run("left by a simnode that stopped", func(t *testing.T) {
		dir := t.TempDir()
		root := filepath.Join(dir, "fs")
		left := filepath.Join(dir, "discarded", "7")
		if err := os.MkdirAll(filepath.Dir(left), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(left, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		newDiscards(root)
		if _, err := os.Lstat(filepath.Dir(left)); !os.IsNotExist(err) {
			t.Errorf("the discard folder a stopped simnode left is still there (%v)", err)
		}
	})
}
