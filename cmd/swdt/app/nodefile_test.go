package app

import (
	"fmt"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
)

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
