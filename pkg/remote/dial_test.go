package remote

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/sshdtest"
)

func TestDialFailsWithinTimeout(t *testing.T) {
	const timeout = 1500 * time.Millisecond
	tests := []struct {
		name      string
		addr      string
		wantStage string
	}{
		{name: "closed port", addr: sshdtest.ClosedPort(t), wantStage: "connect"},
		{name: "server never answers", addr: sshdtest.Silent(t), wantStage: "handshake"},
		// TEST-NET-1 (RFC 5737): unroutable; it either times out or fails
		// at once with "network unreachable", depending on the sandbox.
		{name: "unroutable address", addr: "192.0.2.1:22", wantStage: "connect"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Host: tt.addr, User: "Administrator", Password: "x", SSHConfigFile: NoSSHConfig, DialTimeout: timeout, KnownHostsFile: t.TempDir() + "/kh"}
			start := time.Now()
			_, err := Dial(t.Context(), cfg)
			elapsed := time.Since(start)
			var de *DialError
			if !errors.As(err, &de) {
				t.Fatalf("want *DialError, got %T: %v", err, err)
			}
			if de.Stage != tt.wantStage {
				t.Errorf("stage = %s, want %s (%v)", de.Stage, tt.wantStage, err)
			}
			if elapsed > timeout+2*time.Second {
				t.Errorf("Dial took %s with a %s timeout", elapsed, timeout)
			}
			for _, want := range []string{tt.addr, "1.5s", "firewall"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
		})
	}
}

func TestDialCancel(t *testing.T) {
	addr := sshdtest.Silent(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err := Dial(ctx, Config{Host: addr, User: "u", SSHConfigFile: NoSSHConfig, DialTimeout: time.Minute, KnownHostsFile: t.TempDir() + "/kh"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Dial returned %s after cancel", d)
	}
}
