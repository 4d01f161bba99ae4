package remote

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/swdt/internal/sshdtest"
)

// TestQuickStat: QuickStat describes a path as Stat does, against
// OpenSSH's sftp-server, in its one round trip.
func TestQuickStat(t *testing.T) {
	s := sshdtest.Start(t)
	c := dial(t, sshdConfig(t, s))
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.exe")
	if err := os.WriteFile(file, []byte("not really an agent"), 0o640); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantErr error
	}{
		{name: "a file", path: file},
		{name: "a folder", path: dir},
		{name: "a missing file", path: filepath.Join(dir, "missing.exe"), wantErr: fs.ErrNotExist},
		{name: "a name with spaces and quotes", path: filepath.Join(dir, `it's "here"`), wantErr: fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.QuickStat(t.Context(), tt.path)
			want, werr := c.Stat(t.Context(), tt.path)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !errors.Is(werr, tt.wantErr) {
					t.Fatalf("QuickStat: %v, Stat: %v; want both %v", err, werr, tt.wantErr)
				}
				return
			}
			if err != nil || werr != nil {
				t.Fatalf("QuickStat: %v, Stat: %v", err, werr)
			}
			if got.Name() != want.Name() || got.Size() != want.Size() || !got.ModTime().Equal(want.ModTime()) ||
				got.IsDir() != want.IsDir() || got.Mode().Perm() != want.Mode().Perm() {
				t.Errorf("QuickStat = %s %d %s dir=%v %s, Stat = %s %d %s dir=%v %s",
					got.Name(), got.Size(), got.ModTime(), got.IsDir(), got.Mode().Perm(),
					want.Name(), want.Size(), want.ModTime(), want.IsDir(), want.Mode().Perm())
			}
		})
	}
}

// TestQuickStatWithoutSFTP: a server that does not start the subsystem
// (and, asked for no answer, says nothing) makes QuickStat take the usual
// way, whose error it returns.
func TestQuickStatWithoutSFTP(t *testing.T) {
	srv := sshdtest.StartGoServer(t, "Administrator", "s3cret")
	c := dial(t, Config{
		Host: srv.Addr, User: "Administrator", Password: "s3cret",
		KnownHostsFile: filepath.Join(t.TempDir(), "known_hosts"), HostKeyPolicy: "accept-new",
		SSHConfigFile: NoSSHConfig,
	})
	_, err := c.QuickStat(t.Context(), `C:\Program Files\swdt\agent.exe`)
	_, werr := c.Stat(t.Context(), `C:\Program Files\swdt\agent.exe`)
	if err == nil || werr == nil || err.Error() != werr.Error() {
		t.Fatalf("QuickStat: %v; want Stat's error %v", err, werr)
	}
	// The connection is still good.
	if _, err := c.Exec(t.Context(), "echo", nil, nil, nil); err != nil {
		t.Fatalf("Exec after the fallback: %v", err)
	}
}
