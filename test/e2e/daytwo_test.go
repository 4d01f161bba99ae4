package e2e

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// daytwo: the verbs of a day on the node. swdt cp sends a folder to the
// node's temp folder and brings it back with the same bytes; swdt ssh runs
// a command with a terminal; swdt restart restarts each node's first
// provisioner's service, which comes back with a new process. The copied
// folder stays in C:\Windows\Temp (swdt has no verb to delete files).
func (s *suite) daytwo(t *testing.T) {
	for _, n := range s.nodes {
		t.Run(n.Name, func(t *testing.T) {
			local := filepath.Join(t.TempDir(), "swdt-e2e-cp")
			if err := os.MkdirAll(filepath.Join(local, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			data := make([]byte, 1<<20+3)
			if _, err := rand.Read(data); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(local, "sub", "data.bin"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			remote := fmt.Sprintf(`C:\Windows\Temp\swdt-e2e-cp-%x`, data[:4])
			s.swdtOK(t, "cp", "-c", s.config, local, n.Name+":"+remote)
			back := filepath.Join(t.TempDir(), "back")
			s.swdtOK(t, "cp", "-c", s.config, n.Name+":"+remote, back)
			if got, err := os.ReadFile(filepath.Join(back, "sub", "data.bin")); err != nil || !bytes.Equal(got, data) {
				t.Errorf("the copy came back with %d bytes (%v), want the %d sent", len(got), err, len(data))
			}

			if out := s.swdtOK(t, "ssh", "-c", s.config, n.Name, "--", "hostname"); strings.TrimSpace(out) == "" {
				t.Errorf("swdt ssh -- hostname printed nothing")
			}

			if len(n.Spec.Kubernetes.Provisioners) == 0 {
				return
			}
			service := n.Spec.Kubernetes.Provisioners[0].ServiceName()
			if service == "" {
				return
			}
			var doc struct {
				Result   string
				Services []struct {
					Service             string
					PIDBefore, PIDAfter int
					Status              string
				}
			}
			s.swdtJSON(t, &doc, "restart", "-c", s.config, n.Name, service)
			if len(doc.Services) != 1 || doc.Services[0].Status != "Running" || doc.Services[0].PIDAfter == doc.Services[0].PIDBefore {
				t.Errorf("swdt restart %s: %+v", service, doc)
			}
		})
	}
}
