package app

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"

	"sigs.k8s.io/swdt/pkg/simnode"
)

// DESIGN.md §9: secrets never appear in logs, errors or -v output, neither
// when the login works nor when it fails.
func TestPasswordNeverPrinted(t *testing.T) {
	const password = "Pa55-w0rd-never-printed"
	ts := simnode.StartTest(t, simnode.WithPassword(password))
	for _, tc := range []struct {
		name, value string
		code        int
	}{{"right password", password, exitcode.OK}, {"wrong password", password + "-wrong", exitcode.Failure}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SWDT_TEST_PASSWORD", tc.value)
			c := ts.Credentials()
			doc := strings.Replace(nodeHeader("winworker", c), "    privateKey: "+strconv.Quote(c.PrivateKey)+"\n",
				"    passwordEnv: SWDT_TEST_PASSWORD\n", 1)
			file := filepath.Join(t.TempDir(), "node.yaml")
			if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("SSH_AUTH_SOCK", "")
			t.Setenv("HOME", t.TempDir()) // no default keys: the password is what logs in
			code, out, errOut := run(t, "-vv", "status", "-c", file, "--no-color")
			if !strings.Contains(errOut, "level=DEBUG") {
				t.Fatalf("no debug output (exit %d):\n%s", code, errOut)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, errOut)
			}
			if strings.Contains(out+errOut, password) {
				t.Errorf("the password was printed (exit %d):\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
		})
	}
}
