package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
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

// DESIGN.md §9: the user and password of a source URL appear nowhere:
// not in progress lines, -vv logs, errors or JSON, whether the download
// works or fails.
func TestURLCredentialsNeverPrinted(t *testing.T) {
	t.Parallel()
	body := []byte("MZ kubelet from a private server v2\n")
	sum := sha256.Sum256(body)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "alice" || pass != "s3cr3t" {
			http.Error(w, "who are you?", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	fx := newKubeFixture(t)
	for _, tc := range []struct {
		name, userinfo, sha string
		args                []string
		code                int
	}{
		{"download", "alice:s3cr3t", hex.EncodeToString(sum[:]), nil, exitcode.OK},
		{"wrong digest", "alice:s3cr3t", strings.Repeat("ab", 32), nil, exitcode.Failure},
		{"wrong password", "alice:s3cr3t-old", "", []string{"-o", "json"}, exitcode.Failure},
		{"dry run", "alice:s3cr3t", "", []string{"--dry-run", "-o", "json"}, exitcode.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx.sourceURL["kubelet"] = strings.Replace(srv.URL, "http://", "http://"+tc.userinfo+"@", 1) + "/kubelet.exe"
			fx.sha["kubelet"] = tc.sha
			fx.writeConfig()
			args := append([]string{"--only", "kubelet", "-vv", "--force"}, tc.args...)
			code, out, errOut := fx.run(context.Background(), args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, errOut)
			}
			if !strings.Contains(out+errOut, "http://***@127.0.0.1") {
				t.Errorf("the URL is not shown at all:\nstdout:\n%s\nstderr:\n%s", out, errOut)
			}
			if strings.Contains(out+errOut, "alice") || strings.Contains(out+errOut, "s3cr3t") {
				t.Errorf("the URL's credentials were printed:\nstdout:\n%s\nstderr:\n%s", out, errOut)
			}
		})
	}

	// A URL the config cannot accept is reported without them too.
	fx.sourceURL["kubelet"] = "https://alice:s3cr3t@/kubelet.exe"
	fx.writeConfig()
	code, out, errOut := run(t, "config", "validate", "-c", fx.config, "-o", "json")
	if code != exitcode.Usage || !strings.Contains(out, "https://***@/kubelet.exe") ||
		strings.Contains(out+errOut, "alice") || strings.Contains(out+errOut, "s3cr3t") {
		t.Errorf("config validate: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}
