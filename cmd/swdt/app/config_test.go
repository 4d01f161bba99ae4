package app

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// The flags of config init fill in the sample (pkg/config tests every
// option); a value that makes it invalid writes nothing.
func TestConfigInitFlags(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "node.yaml")
	code, _, errOut := run(t, "config", "init", "--output-file", path, "--hostname", "127.0.0.1:2222",
		"--username", "admin", "--private-key", "id_rsa", "--only", "kubelet")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := config.SampleWith(config.SampleOptions{Hostname: "127.0.0.1:2222", Username: "admin", PrivateKey: "id_rsa", Only: []string{"kubelet"}})
	if err != nil || string(data) != string(want) {
		t.Fatalf("written file differs from SampleWith: %v\n%s", err, data)
	}
	code, _, errOut = run(t, "config", "validate", "-c", path, "--skip-local-files")
	if code != 0 || !strings.Contains(errOut, "is valid") {
		t.Errorf("validate: exit %d\n%s", code, errOut)
	}

	bad := filepath.Join(t.TempDir(), "node.yaml")
	code, _, errOut = run(t, "config", "init", "--output-file", bad, "--only", "kube-proxy")
	if code != exitcode.Usage || !strings.Contains(errOut, `the sample has no "kube-proxy"`) {
		t.Errorf("--only kube-proxy: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(bad); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an invalid init wrote %s: %v", bad, err)
	}
}
