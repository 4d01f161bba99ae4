package app

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
)

// writeNodeFile writes doc as node.yaml in dir and returns its path.
func writeNodeFile(t *testing.T, dir, doc string) string {
	t.Helper()
	path := filepath.Join(dir, "node.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// decodeJSON decodes a command's -o json stdout.
func decodeJSON[T any](t *testing.T, out string) T {
	t.Helper()
	var got T
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	return got
}

// nodeHeader is the start of a node.yaml for a test node named name that
// logs in with c under the strict host key policy; the caller appends the
// rest of spec (indented by two spaces).
func nodeHeader(name string, c v1alpha1.CredentialsSpec) string {
	return fmt.Sprintf(`apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: %s
spec:
  credentials:
    hostname: %q
    username: %s
    privateKey: %q
    knownHostsFile: %q
    hostKeyPolicy: strict
`, name, c.Hostname, c.Username, c.PrivateKey, c.KnownHostsFile)
}
