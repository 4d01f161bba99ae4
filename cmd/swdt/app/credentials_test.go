package app

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// TestPasswordEnvUnset: swdt status on a node file whose passwordEnv
// variable is unset logs in with the key without a warning, or, with no
// key, fails naming the variable and the node file.
func TestPasswordEnvUnset(t *testing.T) {
	ts := simnode.StartTest(t)
	t.Setenv("HOME", t.TempDir()) // no default keys
	t.Setenv("SSH_AUTH_SOCK", "")
	t.Setenv("SWDT_TEST_PW", "")
	os.Unsetenv("SWDT_TEST_PW")
	tests := []struct {
		name     string
		key      string
		wantCode int
		want     string
	}{
		{name: "a key", key: ts.KeyFile, wantCode: exitcode.OK},
		{name: "no key", wantCode: exitcode.Failure,
			want: "SWDT_TEST_PW is unset (credentials.passwordEnv in %s), and there is no private key or ssh-agent key to log in with instead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ts.Credentials()
			c.PrivateKey = tt.key
			path := writeNodeFile(t, t.TempDir(), nodeHeader("winworker", c)+"    passwordEnv: SWDT_TEST_PW\n")
			code, _, errOut := run(t, "status", "-c", path, "--no-color")
			want := strings.ReplaceAll(tt.want, "%s", path)
			if tt.want == "" && strings.Contains(errOut, "warning") {
				t.Errorf("a warning although the key logged in:\n%s", errOut)
			}
			if code != tt.wantCode || !strings.Contains(errOut, want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", code, tt.wantCode, errOut, want)
			}
		})
	}
}
