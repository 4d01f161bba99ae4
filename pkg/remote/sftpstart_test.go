package remote

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/swdt/internal/sshdtest"
)

// The SFTP subsystem starts without waiting for the server's answer to the
// request (one round trip fewer on every connection that moves files);
// a server that stays silent to such a request gets the usual start.
func TestSFTPStart(t *testing.T) {
	tests := []struct {
		name      string
		onlyAsked bool
		// want is the want-reply flag of each subsystem request.
		want []bool
	}{
		{name: "answer not awaited", want: []bool{false}},
		{name: "server silent unless asked", onlyAsked: true, want: []bool{false, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := sshdtest.StartGoServer(t, "Administrator", "s3cret")
			srv.SFTP.Store(true)
			srv.SFTPOnlyWhenAsked.Store(tt.onlyAsked)
			c := dial(t, Config{
				Host: srv.Addr, User: "Administrator", Password: "s3cret",
				KnownHostsFile: filepath.Join(t.TempDir(), "known_hosts"), HostKeyPolicy: "accept-new",
				SSHConfigFile: NoSSHConfig,
			})
			dir := t.TempDir()
			fi, err := c.Stat(t.Context(), dir)
			if err != nil || !fi.IsDir() {
				t.Fatalf("Stat(%s) = %v, %v; want the directory", dir, fi, err)
			}
			if _, err := c.Stat(t.Context(), filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Stat of a missing file: %v, want fs.ErrNotExist", err)
			}
			if got := srv.SubsystemReplies(); !slices.Equal(got, tt.want) {
				t.Errorf("subsystem requests asked for an answer: %v, want %v", got, tt.want)
			}
		})
	}
}
