package remote

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"sigs.k8s.io/swdt/internal/sshdtest"
)

// writeSSHConfig writes an ssh config file and returns its path.
func writeSSHConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// hostLine is a known_hosts line for addr with key.
func hostLine(addr string, key ssh.PublicKey) string {
	return knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
}

// TestSSHConfigHostKeys: UserKnownHostsFile and StrictHostKeyChecking from
// the ssh config, and the node file's fields winning over them.
func TestSSHConfigHostKeys(t *testing.T) {
	srv := sshdtest.StartGoServer(t, "Administrator", "s3cret")
	otherKey := sshdtest.StartGoServer(t, "x", "y").HostKey
	type files struct{ first, second, node string }
	tests := []struct {
		name string
		// shkc is the StrictHostKeyChecking value; "" leaves it unset.
		shkc string
		// nodePolicy and nodeFile are the node file's fields.
		nodePolicy string
		nodeFile   bool
		// setup writes known_hosts files before the dial.
		setup func(t *testing.T, f files)
		// wantErr checks a refused dial; nil means the dial succeeds.
		wantErr func(t *testing.T, err error, f files)
		// wantRecorded is the file that must hold the server's key after.
		wantRecorded func(f files) string
		wantWarning  string
	}{
		{name: "yes refuses an unknown host", shkc: "yes", wantErr: func(t *testing.T, err error, f files) {
			var ue *UnknownHostError
			if !errors.As(err, &ue) || !strings.Contains(ue.Policy, "StrictHostKeyChecking is yes in") {
				t.Fatalf("want *UnknownHostError from StrictHostKeyChecking yes, got %v", err)
			}
			for _, want := range []string{f.first, f.second, ssh.FingerprintSHA256(srv.HostKey)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		}},
		{name: "ask is yes, and says why", shkc: "ask", wantErr: func(t *testing.T, err error, f files) {
			if !errors.Is(err, ErrUnknownHost) || !strings.Contains(err.Error(), "ask in") || !strings.Contains(err.Error(), "never prompts") {
				t.Fatalf("want an unknown host error explaining ask, got %v", err)
			}
		}},
		{name: "accept-new records in the first file", shkc: "accept-new", wantRecorded: func(f files) string { return f.first }},
		{name: "yes finds the key in the second file", shkc: "yes",
			setup: func(t *testing.T, f files) { writeFile(t, f.second, hostLine(srv.Addr, srv.HostKey)) }},
		{name: "yes refuses a changed key", shkc: "yes",
			setup: func(t *testing.T, f files) { writeFile(t, f.second, hostLine(srv.Addr, otherKey)) },
			wantErr: func(t *testing.T, err error, f files) {
				var ce *HostKeyChangedError
				if !errors.As(err, &ce) || ce.KnownHostsFile != f.second || ce.Line != 1 {
					t.Fatalf("want *HostKeyChangedError at %s:1, got %v", f.second, err)
				}
			}},
		{name: "accept-new refuses a changed key", shkc: "accept-new",
			setup: func(t *testing.T, f files) { writeFile(t, f.first, hostLine(srv.Addr, otherKey)) },
			wantErr: func(t *testing.T, err error, f files) {
				var ce *HostKeyChangedError
				if !errors.As(err, &ce) {
					t.Fatalf("want *HostKeyChangedError, got %v", err)
				}
			}},
		{name: "no accepts a changed key, with a warning", shkc: "no",
			setup:       func(t *testing.T, f files) { writeFile(t, f.first, hostLine(srv.Addr, otherKey)) },
			wantWarning: "StrictHostKeyChecking is no in"},
		{name: "the node file's hostKeyPolicy wins", shkc: "yes", nodePolicy: "accept-new", wantRecorded: func(f files) string { return f.first }},
		{name: "the node file's knownHostsFile wins", shkc: "yes", nodeFile: true,
			setup: func(t *testing.T, f files) {
				writeFile(t, f.first, hostLine(srv.Addr, otherKey))
				writeFile(t, f.node, hostLine(srv.Addr, srv.HostKey))
			}},
		{name: "a bad StrictHostKeyChecking", shkc: "maybe", wantErr: func(t *testing.T, err error, f files) {
			if err == nil || !strings.Contains(err.Error(), `StrictHostKeyChecking "maybe"`) || !strings.Contains(err.Error(), "yes, accept-new, no or ask") {
				t.Fatalf("err = %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			f := files{
				first:  filepath.Join(home, "kh", "first"), // the directory does not exist yet
				second: filepath.Join(home, "second"),
				node:   filepath.Join(home, "node_known_hosts"),
			}
			conf := "Host node\n  HostName 127.0.0.1\n  Port " + srv.Addr[strings.LastIndex(srv.Addr, ":")+1:] +
				"\n  User Administrator\n  UserKnownHostsFile ~/kh/first %d/second\n"
			if tt.shkc != "" {
				conf += "  StrictHostKeyChecking " + tt.shkc + "\n"
			}
			if tt.setup != nil {
				tt.setup(t, f)
			}
			var warnings []string
			var added []string // first contacts, said apart from the warnings
			cfg := Config{Host: "node", Password: "s3cret", SSHConfigFile: writeSSHConfig(t, conf), HostKeyPolicy: tt.nodePolicy,
				Warn: func(m string) {
					if strings.HasPrefix(m, "Permanently added ") {
						added = append(added, m)
						return
					}
					warnings = append(warnings, m)
				}}
			if tt.nodeFile {
				cfg.KnownHostsFile = f.node
			}
			c, err := Dial(t.Context(), cfg)
			if tt.wantErr != nil {
				if err == nil {
					c.Close()
					t.Fatal("Dial succeeded, want an error")
				}
				tt.wantErr(t, err, f)
				return
			}
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			c.Close()
			if tt.wantRecorded != nil {
				if data, err := os.ReadFile(tt.wantRecorded(f)); err != nil || string(data) != hostLine(srv.Addr, srv.HostKey) {
					t.Errorf("%s = %q, %v; want the server's key", tt.wantRecorded(f), data, err)
				}
				if len(added) != 1 || !strings.HasSuffix(added[0], " to "+tt.wantRecorded(f)) {
					t.Errorf("first contact said %q, want that the key was added to %s", added, tt.wantRecorded(f))
				}
			}
			if tt.wantWarning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tt.wantWarning)) {
				t.Errorf("warnings %q, want one containing %q", warnings, tt.wantWarning)
			}
			if tt.wantWarning == "" && len(warnings) > 0 {
				t.Errorf("unexpected warnings %q", warnings)
			}
		})
	}
}

// TestDefaultsWithoutSSHConfig: with no ssh config, accept-new and
// ~/.ssh/known_hosts, as before swdt read StrictHostKeyChecking.
func TestDefaultsWithoutSSHConfig(t *testing.T) {
	srv := sshdtest.StartGoServer(t, "Administrator", "s3cret")
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, file := range []string{NoSSHConfig, ""} { // none, and a missing ~/.ssh/config
		dial(t, Config{Host: srv.Addr, User: "Administrator", Password: "s3cret", SSHConfigFile: file}).Close()
		kh := filepath.Join(home, ".ssh", "known_hosts")
		if data, err := os.ReadFile(kh); err != nil || string(data) != hostLine(srv.Addr, srv.HostKey) {
			t.Fatalf("%s = %q, %v; want the server's key recorded once", kh, data, err)
		}
	}
}

// TestUnsupportedDirectivesWarnOnce: directives set for the host that swdt
// does not support are named in one warning per Dial, reconnects included;
// those of other hosts, those it honours and those that only concern
// interactive ssh are not.
func TestUnsupportedDirectivesWarnOnce(t *testing.T) {
	srv := sshdtest.StartGoServer(t, "Administrator", "s3cret")
	inc := writeSSHConfig(t, "Host node\n  HashKnownHosts yes\n")
	conf := writeSSHConfig(t, "Host other\n  Ciphers aes128-ctr\n"+
		"Host node\n  HostName 127.0.0.1\n  Port "+srv.Addr[strings.LastIndex(srv.Addr, ":")+1:]+"\n  User Administrator\n"+
		"  Compression yes\n  ForwardAgent yes\n  IdentitiesOnly yes\n  Include "+inc+"\n"+
		"Host *\n  ServerAliveInterval 30\n  StrictHostKeyChecking accept-new\n")
	var warnings []string
	c := dial(t, Config{Host: "node", Password: "s3cret", SSHConfigFile: conf, KnownHostsFile: filepath.Join(t.TempDir(), "kh"),
		Warn: func(m string) {
			if !strings.HasPrefix(m, "Permanently added ") { // the first contact's, not this test's
				warnings = append(warnings, m)
			}
		}})
	if err := c.Reconnect(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 {
		t.Fatalf("warnings = %q, want exactly one", warnings)
	}
	w := warnings[0]
	for _, want := range []string{conf, "Compression, IdentitiesOnly, HashKnownHosts for node", "ignored", "docs/node-file.md"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	for _, not := range []string{"Ciphers", "ForwardAgent", "ServerAlive", "StrictHostKeyChecking", "HostName", "Port", "User "} {
		if strings.Contains(w, not) {
			t.Errorf("warning %q names %q", w, not)
		}
	}
}

func TestExpandTokens(t *testing.T) {
	tokens := map[byte]string{'h': "10.0.0.5", 'p': "22", 'r': "Administrator"}
	tests := []struct{ in, want, wantErr string }{
		{in: "plain", want: "plain"},
		{in: "nc %h %p", want: "nc 10.0.0.5 22"},
		{in: "%r@%h:%p 100%%", want: "Administrator@10.0.0.5:22 100%"},
		{in: "%C", wantErr: "does not expand %C here (it knows %h %p %r and %%)"},
		{in: "50%", wantErr: "lone %"},
	}
	for _, tt := range tests {
		got, err := expandTokens("ProxyCommand", tt.in, tokens)
		switch {
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("expandTokens(%q) error = %v, want %q", tt.in, err, tt.wantErr)
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("expandTokens(%q) = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
