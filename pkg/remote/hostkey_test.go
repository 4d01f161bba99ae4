package remote

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/internal/sshdtest"
)

func TestAcceptNewRecordsUnknownHost(t *testing.T) {
	s := sshdtest.Start(t)
	cfg := sshdConfig(t, s)
	cfg.KnownHostsFile = filepath.Join(t.TempDir(), "fresh", ".ssh", "known_hosts")
	var warnings []string
	cfg.Warn = func(msg string) { warnings = append(warnings, msg) }
	dial(t, cfg).Close()
	// The first contact says what was recorded, as ssh does.
	want := "Permanently added '" + strings.Fields(s.KnownHostsLine())[0] + "' (" + keyTypeName(s.HostKeys[0].Type()) + ") to " + cfg.KnownHostsFile
	if len(warnings) != 1 || warnings[0] != want {
		t.Errorf("messages %q, want %q", warnings, want)
	}

	data, err := os.ReadFile(cfg.KnownHostsFile)
	if err != nil {
		t.Fatalf("known_hosts not written: %v", err)
	}
	if got := string(data); got != s.KnownHostsLine() {
		t.Errorf("known_hosts = %q, want %q", got, s.KnownHostsLine())
	}
	for path, want := range map[string]os.FileMode{cfg.KnownHostsFile: 0o600, filepath.Dir(cfg.KnownHostsFile): 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s mode = %v, want %v", path, fi.Mode().Perm(), want)
		}
	}

	// The second connection uses the recorded key, even under strict, and
	// records nothing more.
	cfg.HostKeyPolicy = "strict"
	dial(t, cfg).Close()
	cfg.HostKeyPolicy = "accept-new"
	dial(t, cfg).Close()
	if again, _ := os.ReadFile(cfg.KnownHostsFile); string(again) != string(data) {
		t.Errorf("known_hosts changed on reconnect: %q", again)
	}
	if len(warnings) != 1 {
		t.Errorf("reconnecting said %q", warnings[1:])
	}
}

func TestStrictRefusesUnknownHost(t *testing.T) {
	s := sshdtest.Start(t)
	cfg := sshdConfig(t, s)
	cfg.HostKeyPolicy = "strict"
	for _, exists := range []bool{false, true} {
		if exists {
			// A known_hosts with other hosts only.
			os.WriteFile(cfg.KnownHostsFile, []byte("[otherhost]:22 "+string(ssh.MarshalAuthorizedKey(s.HostKeys[0]))), 0o600)
		}
		_, err := Dial(t.Context(), cfg)
		var ue *UnknownHostError
		if !errors.Is(err, ErrUnknownHost) || !errors.As(err, &ue) {
			t.Fatalf("known_hosts exists=%v: want ErrUnknownHost, got %v", exists, err)
		}
		if ue.Fingerprint != s.Fingerprint() || !strings.Contains(err.Error(), s.Fingerprint()) {
			t.Errorf("error %q lacks the server fingerprint %s", err, s.Fingerprint())
		}
	}
	if data, _ := os.ReadFile(cfg.KnownHostsFile); strings.Contains(string(data), "127.0.0.1") {
		t.Errorf("strict recorded the host: %q", data)
	}
}

func TestChangedHostKeyRefused(t *testing.T) {
	s := sshdtest.Start(t)
	cfg := sshdConfig(t, s)
	dial(t, cfg).Close() // learn the key
	oldFP := s.Fingerprint()
	s.RestartWithNewHostKey()
	newFP := s.Fingerprint()

	for _, policy := range []string{"strict", "accept-new"} {
		t.Run(policy, func(t *testing.T) {
			cfg.HostKeyPolicy = policy
			_, err := Dial(t.Context(), cfg)
			var ce *HostKeyChangedError
			if !errors.As(err, &ce) {
				t.Fatalf("want *HostKeyChangedError, got %v", err)
			}
			if ce.Got != newFP || len(ce.Want) != 1 || ce.Want[0] != oldFP {
				t.Errorf("fingerprints got %s want %v, expected %s and %s", ce.Got, ce.Want, newFP, oldFP)
			}
			for _, want := range []string{oldFP, newFP, "ssh-keygen -R '[127.0.0.1]:" + itoa(s.Port) + "'", cfg.KnownHostsFile} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestInsecureWarns(t *testing.T) {
	s := sshdtest.Start(t)
	cfg := sshdConfig(t, s)
	cfg.HostKeyPolicy = "insecure"
	os.WriteFile(cfg.KnownHostsFile, []byte(knownLine(t, s.Addr)), 0o600) // a wrong key: ignored
	var warnings []string
	cfg.Warn = func(msg string) { warnings = append(warnings, msg) }
	dial(t, cfg).Close()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "insecure") || !strings.Contains(warnings[0], s.Fingerprint()) {
		t.Fatalf("warnings = %q", warnings)
	}
}

// TestKnownKeyTypePreferred: a host recorded with only one of its key
// types must connect under strict whichever type it is, or a good host
// looks changed.
func TestKnownKeyTypePreferred(t *testing.T) {
	s := sshdtest.Start(t, sshdtest.WithHostKeyTypes("ed25519", "ecdsa"))
	for _, k := range s.HostKeys {
		t.Run(k.Type(), func(t *testing.T) {
			cfg := sshdConfig(t, s)
			cfg.HostKeyPolicy = "strict"
			line := "[127.0.0.1]:" + itoa(s.Port) + " " + string(ssh.MarshalAuthorizedKey(k))
			os.WriteFile(cfg.KnownHostsFile, []byte(line), 0o600)
			dial(t, cfg).Close()
		})
	}
}

// knownLine is a known_hosts line with a random key for addr.
func knownLine(t *testing.T, addr string) string {
	t.Helper()
	srv := sshdtest.StartGoServer(t, "x", "y")
	return "[127.0.0.1]:" + addr[strings.LastIndex(addr, ":")+1:] + " " + string(ssh.MarshalAuthorizedKey(srv.HostKey))
}
