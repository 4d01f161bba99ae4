package node

import (
	"strings"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/remote"
)

func TestRemoteConfig(t *testing.T) {
	t.Setenv("SWDT_TEST_PW", "fromenv")
	tests := []struct {
		name    string
		spec    v1alpha1.CredentialsSpec
		wantPW  string
		wantErr string
	}{
		{name: "password", spec: v1alpha1.CredentialsSpec{Hostname: "h", Password: "p"}, wantPW: "p"},
		{name: "passwordEnv", spec: v1alpha1.CredentialsSpec{Hostname: "h", PasswordEnv: "SWDT_TEST_PW"}, wantPW: "fromenv"},
		{name: "passwordEnv wins", spec: v1alpha1.CredentialsSpec{Hostname: "h", Password: "p", PasswordEnv: "SWDT_TEST_PW"}, wantPW: "fromenv"},
		{name: "unset passwordEnv falls back", spec: v1alpha1.CredentialsSpec{Hostname: "h", Password: "p", PasswordEnv: "SWDT_TEST_UNSET"}, wantPW: "p"},
		{name: "unset passwordEnv: Dial decides", spec: v1alpha1.CredentialsSpec{Hostname: "h", PasswordEnv: "SWDT_TEST_UNSET"}, wantPW: ""},
		{name: "no host", spec: v1alpha1.CredentialsSpec{}, wantErr: "hostname is empty"},
		{name: "bad policy", spec: v1alpha1.CredentialsSpec{Hostname: "h", HostKeyPolicy: "yolo"}, wantErr: `unknown host key policy "yolo"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := RemoteConfig(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Password != tt.wantPW || cfg.HostKeyPolicy != "" || cfg.DialTimeout != remote.DefaultDialTimeout {
				t.Errorf("cfg = password %q policy %q timeout %s", cfg.Password, cfg.HostKeyPolicy, cfg.DialTimeout)
			}
		})
	}
}
